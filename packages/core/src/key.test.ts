import { describe, expect, it } from "vitest";
import { IdempotencyErrorCode, isIdempotencyError } from "./errors.js";
import { newIdempotencyKey, parseIdempotencyKey } from "./key.js";

function codeOf(header: string | null | undefined): string | undefined {
  try {
    parseIdempotencyKey(header, "orders.place");
    return undefined;
  } catch (error) {
    return isIdempotencyError(error) ? error.code : "not an IdempotencyError";
  }
}

describe("parseIdempotencyKey", () => {
  it("accepts a UUID and any visible ASCII up to 255 characters", () => {
    expect(parseIdempotencyKey("8e0f3c1a-7d1b-4b5e-9a51-3f2b1c0d9e8f")).toBe("8e0f3c1a-7d1b-4b5e-9a51-3f2b1c0d9e8f");
    expect(parseIdempotencyKey("a".repeat(255))).toHaveLength(255);
    expect(parseIdempotencyKey("!~{}[]:;=?@")).toBe("!~{}[]:;=?@");
  });

  it("accepts the structured-field string form, escapes included", () => {
    expect(parseIdempotencyKey('"abc-123"')).toBe("abc-123");
    expect(parseIdempotencyKey('"a\\"b\\\\c"')).toBe('a"b\\c');
    expect(parseIdempotencyKey('  "padded"  ')).toBe("padded");
  });

  it("drops only the spaces and tabs HTTP puts around a value", () => {
    expect(parseIdempotencyKey(" \tabc-123\t ")).toBe("abc-123");
  });

  it("names the header and the operation when the key is missing", () => {
    expect(() => parseIdempotencyKey(undefined, "orders.place")).toThrow(/Idempotency-Key.*orders\.place/);
    expect(codeOf(null)).toBe(IdempotencyErrorCode.KEY_MISSING);
  });

  it.each([
    ["empty", ""],
    ["blank", "   "],
    ["empty quotes", '""'],
    ["256 characters", "a".repeat(256)],
    ["a control character", "abc\u0001def"],
    ["a tab", "abc\tdef"],
    ["an inner space", "abc def"],
    ["non-ASCII", "clé-🔑"],
    ["DEL", "abc\u007f"],
    ["an unterminated quote", '"abc'],
    ["a bare inner quote", '"a"b"'],
    ["a dangling escape", '"abc\\"'],
    ["an unknown escape", '"a\\nb"'],
    ["led by a non-breaking space", "\u00a0abc"],
    ["ended by a non-breaking space", "abc\u00a0"],
    ["ended by a line separator", "abc\u2028"],
  ])("refuses a key that is %s", (_, header) => {
    expect(codeOf(header)).toBe(IdempotencyErrorCode.KEY_INVALID);
  });
});

describe("newIdempotencyKey", () => {
  it("mints distinct UUID v4 keys", () => {
    const keys = new Set(Array.from({ length: 1_000 }, newIdempotencyKey));
    expect(keys.size).toBe(1_000);
    for (const key of keys)
      expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
