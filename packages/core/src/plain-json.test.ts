import { describe, expect, it } from "vitest";
import { MAX_PLAIN_JSON_DEPTH, notPlainJson } from "./plain-json.js";

describe("notPlainJson: the one rule for what is stored as JSON without a transformer", () => {
  it("passes what JSON gives back as it went in, an object without a prototype included", () => {
    const bare = Object.assign(Object.create(null), { total: 12.5 });
    expect(notPlainJson({ id: "o1", lines: [1, "two", true, null], bare, skipped: undefined })).toBeUndefined();
  });

  it.each([
    ["a Date", { at: new Date(0) }, "value.at", "a Date instance"],
    ["a Map", [new Map()], "value[0]", "a Map instance"],
    ["NaN", { total: Number.NaN }, "value.total", "NaN"],
    ["a bigint", { n: 1n }, "value.n", "a bigint"],
    ["undefined in an array", [undefined], "value[0]", "undefined"],
    [
      "an array with a hole",
      Object.assign(new Array(3), { 0: 1, 2: 3 }),
      "value",
      "an array with holes or named properties",
    ],
    ["a symbol key", { [Symbol("internal")]: 1 }, "value", "an object with symbol keys"],
  ])("names %s and where it is", (_, value, path, what) => {
    expect(notPlainJson(value)).toEqual({ path, what });
  });

  it("names a cycle instead of overflowing the stack, and a value nested past the limit", () => {
    const cyclic: { self?: unknown } = {};
    cyclic.self = { back: cyclic };
    expect(notPlainJson(cyclic)).toEqual({
      path: "value.self.back",
      what: "a reference back to an enclosing value (a cycle)",
    });
    let deep: unknown = 1;
    for (let level = 0; level <= MAX_PLAIN_JSON_DEPTH + 1; level++) deep = [deep];
    expect(notPlainJson(deep)?.what).toBe(`nested more than ${MAX_PLAIN_JSON_DEPTH} levels deep`);
    const shared = { n: 1 };
    expect(notPlainJson({ a: shared, b: shared })).toBeUndefined();
  });

  it("refuses undefined members and passes valid Dates where asked (an outbox payload)", () => {
    const payload = { name: "payload", undefinedMembers: false, dates: true };
    expect(notPlainJson({ at: new Date(0) }, payload)).toBeUndefined();
    expect(notPlainJson({ at: new Date(Number.NaN) }, payload)).toEqual({
      path: "payload.at",
      what: "an invalid date",
    });
    expect(notPlainJson({ note: undefined }, payload)).toEqual({ path: "payload.note", what: "undefined" });
  });
});
