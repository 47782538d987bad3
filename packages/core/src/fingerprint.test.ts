import { describe, expect, it } from "vitest";
import { canonicalJson, fingerprint, fingerprintAsync } from "./fingerprint.js";

describe("fingerprint", () => {
  it("ignores object key order, at every depth", () => {
    const a = { items: [{ sku: "A", qty: 1 }], note: { b: 2, a: 1 } };
    const b = { note: { a: 1, b: 2 }, items: [{ qty: 1, sku: "A" }] };
    expect(fingerprint(a)).toBe(fingerprint(b));
    expect(fingerprint(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("sees every change of value or type", () => {
    const inputs = [
      { qty: 1 },
      { qty: 2 },
      { qty: "1" },
      { qty: 1n },
      { qty: null },
      { qty: true },
      [1, 2],
      [2, 1],
      [1, undefined],
      [1, null],
      new Date("2026-01-01T00:00:00.000Z"),
      "2026-01-01T00:00:00.000Z",
      undefined,
      null,
    ];
    const prints = inputs.map((input) => fingerprint(input));
    expect(new Set(prints).size).toBe(inputs.length);
  });

  it("drops undefined object properties, as JSON and tRPC transformers do", () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe(canonicalJson({ a: 1 }));
  });

  it("writes the values JSON cannot carry with tags that JSON cannot contain", () => {
    expect(canonicalJson(new Date("2026-01-02T03:04:05.006Z"))).toBe('~d"2026-01-02T03:04:05.006Z"');
    expect(canonicalJson(new Date(Number.NaN))).toBe("~dnull");
    expect(canonicalJson(12345678901234567890n)).toBe("~n12345678901234567890");
    expect(canonicalJson([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0])).toBe(
      "[~NaN,~Inf,~-Inf,0]",
    );
    expect(canonicalJson(undefined)).toBe("~u");
  });

  it("orders Map entries and Set members, so insertion order does not matter", () => {
    expect(
      canonicalJson(
        new Map([
          ["b", 2],
          ["a", 1],
        ]),
      ),
    ).toBe(
      canonicalJson(
        new Map([
          ["a", 1],
          ["b", 2],
        ]),
      ),
    );
    expect(canonicalJson(new Set([3, 1, 2]))).toBe(canonicalJson(new Set([1, 2, 3])));
    expect(canonicalJson(new Set([1]))).not.toBe(canonicalJson([1]));
  });

  it("escapes strings exactly as JSON does, so no string can imitate a tag", () => {
    expect(canonicalJson({ 'k"ey': '~d"x"' })).toBe('{"k\\"ey":"~d\\"x\\""}');
  });

  it("refuses values it cannot compare", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(TypeError);
    expect(() => canonicalJson({ f: () => 1 })).toThrow(TypeError);
    expect(() => canonicalJson(Symbol("s"))).toThrow(TypeError);
  });

  it("accepts the same object twice when it is not a cycle", () => {
    const shared = { sku: "A" };
    expect(canonicalJson([shared, shared])).toBe('[{"sku":"A"},{"sku":"A"}]');
  });
});

describe("plain JSON's canonical text", () => {
  it("is RFC 8785's (JCS), so a client of another language reproduces a fingerprint with any JCS library", () => {
    // RFC 8785's own sample (section 3.2.3): member order by UTF-16 code units, ECMAScript numbers and escapes.
    const input = JSON.parse(
      String.raw`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`,
    );
    expect(canonicalJson(input)).toBe(
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
    // Its sorting sample: keys ordered by their UTF-16 code units, not by code points or locale.
    const keys = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis",
    };
    expect([...canonicalJson(keys).matchAll(/:"([^"]+)"/g)].map(([, name]) => name)).toEqual([
      "Carriage Return",
      "One",
      "Control",
      "Latin Small Letter O With Diaeresis",
      "Euro Sign",
      "Emoji: Grinning Face",
      "Hebrew Letter Dalet With Dagesh",
    ]);
  });
});

describe("inputs that are not plain data", () => {
  const upload = (bytes: string, name = "cat.png", lastModified = 1) => {
    const form = new FormData();
    form.append("caption", "my cat");
    form.append("file", new File([bytes], name, { type: "image/png", lastModified }));
    return form;
  };

  it("hashes FormData by its entries and its files' names, types and bytes, never their dates", async () => {
    const first = await fingerprintAsync(upload("first picture"));
    expect(await fingerprintAsync(upload("first picture", "cat.png", 99))).toBe(first);
    expect(await fingerprintAsync(upload("other picture"))).not.toBe(first);
    expect(await fingerprintAsync(upload("first picture", "dog.png"))).not.toBe(first);
    const renamed = new FormData();
    renamed.append("caption", "my dog");
    renamed.append("file", new File(["first picture"], "cat.png", { type: "image/png" }));
    expect(await fingerprintAsync(renamed)).not.toBe(first);
    expect(await fingerprintAsync({ form: upload("first picture") })).not.toBe(first);
  });

  it("tells a Blob from a File with the same bytes, and hashes plain data as fingerprint() does", async () => {
    const blob = new Blob(["bytes"], { type: "text/plain" });
    const file = new File(["bytes"], "a.txt", { type: "text/plain" });
    expect(await fingerprintAsync(blob)).not.toBe(await fingerprintAsync(file));
    const plain = { items: [{ sku: "A", qty: 1 }], at: new Date(0) };
    expect(await fingerprintAsync(plain)).toBe(fingerprint(plain));
  });

  it("refuses a Blob synchronously, naming fingerprintAsync, unless asked to compare files by metadata", () => {
    expect(() => fingerprint(upload("x"))).toThrow(/File's bytes are read asynchronously.*fingerprintAsync/);
    const metadata = (form: FormData) => fingerprint(form, { blobs: "metadata" });
    expect(metadata(upload("x", "cat.png", 1))).toBe(metadata(upload("y", "cat.png", 1)));
    expect(metadata(upload("x", "cat.png", 1))).not.toBe(metadata(upload("x", "cat.png", 2)));
  });

  it("hashes binary data by type and bytes, never as the object of its indices", () => {
    const prints = [
      new Uint8Array([1, 2]),
      { 0: 1, 1: 2 },
      [1, 2],
      new Uint8Array([2, 1]),
      new Uint16Array([1, 2]),
      new Uint8Array([1, 2]).buffer,
      new DataView(new Uint8Array([1, 2]).buffer),
    ].map((input) => fingerprint(input));
    expect(new Set(prints).size).toBe(prints.length);
    // Node's Buffer is such a subclass of Uint8Array.
    class Bytes extends Uint8Array {}
    expect(fingerprint(new Bytes([1, 2]))).toBe(fingerprint(new Uint8Array([1, 2])));
    expect(fingerprint(new Uint8Array([9, 1, 2, 9]).subarray(1, 3))).toBe(fingerprint(new Uint8Array([1, 2])));
  });

  it("hashes URLs, search parameters and regular expressions by their content", () => {
    expect(fingerprint(new URL("https://a.example/x"))).not.toBe(fingerprint(new URL("https://a.example/y")));
    expect(fingerprint(new URL("https://a.example/x"))).not.toBe(fingerprint("https://a.example/x"));
    expect(fingerprint(new URLSearchParams("a=1&b=2"))).not.toBe(fingerprint(new URLSearchParams("a=1&b=3")));
    expect(fingerprint(/a/g)).not.toBe(fingerprint(/a/i));
  });

  it("refuses what it cannot compare by content, naming its type, rather than hashing its enumerable keys", () => {
    class Money {
      readonly #cents: number;
      constructor(cents: number) {
        this.#cents = cents;
      }
      get cents() {
        return this.#cents;
      }
    }
    expect(() => fingerprint({ price: new Money(100) })).toThrow(/Cannot fingerprint a Money by its content/);
    expect(() => fingerprint(new ReadableStream())).toThrow(/ReadableStream/);
    expect(() => fingerprint(new Error("x"))).toThrow(/Error/);
    expect(() => fingerprint(Object.create(null))).not.toThrow();
  });
});
