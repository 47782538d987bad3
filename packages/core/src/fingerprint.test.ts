import { describe, expect, it } from "vitest";
import { canonicalJson, fingerprint } from "./fingerprint.js";

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
