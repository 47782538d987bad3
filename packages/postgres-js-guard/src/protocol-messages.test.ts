import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { endsSession, errorFields, errorResponse, readyForQuery, ServerStreamReader } from "./protocol-messages.js";

/** A message of `type` with a body of `length` bytes. */
function message(type: string, length: number): Buffer {
  const bytes = Buffer.alloc(5 + length, 7);
  bytes.write(type);
  bytes.writeInt32BE(length + 4, 1);
  return bytes;
}

const serverMessage = fc.oneof(
  fc.nat(3_000).map((length) => message("D", length)),
  fc.constantFrom("I", "T", "E").map((status) => readyForQuery(status as "I" | "T" | "E")),
  fc.constant(errorResponse({ severity: "ERROR", code: "23505", message: "duplicate key" })),
  fc.constant(message("C", 0)),
);
const fatal = errorResponse({ severity: "FATAL", code: "57P01", message: "terminating connection" });

/** Splits `bytes` at the given cut points (a stream's chunks). */
function chunks(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  return [...points, bytes.length].map((end, i) => bytes.subarray(i === 0 ? 0 : points[i - 1], end));
}

describe("ServerStreamReader", () => {
  it("passes every byte on in order, however the stream is cut, and stops at a FATAL error", () => {
    fc.assert(
      fc.property(
        fc.array(serverMessage, { maxLength: 30 }),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 20 }),
        (messages, endsWithFatal, cuts) => {
          const before = Buffer.concat(messages);
          const stream = endsWithFatal ? Buffer.concat([before, fatal, message("D", 10)]) : before;
          const statuses: number[] = [];
          const reader = new ServerStreamReader({
            started: () => undefined,
            ready: (status) => statuses.push(status),
            error: (error) => !endsSession(errorFields(error)),
          });
          const passed = Buffer.concat(chunks(stream, cuts).flatMap((chunk) => reader.read(chunk)));
          expect(passed.equals(before)).toBe(true);
          const expected = messages.filter((m) => m[0] === 0x5a).map((m) => m[5]);
          expect(statuses).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("passes what `started` returns on right before its message, however the stream is cut", () => {
    const inserted = errorResponse({ severity: "ERROR", code: "25P02", message: "commit answered rollback" });
    fc.assert(
      fc.property(
        fc.array(serverMessage, { maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (messages, cuts) => {
          const reader = new ServerStreamReader({
            started: (type) => (type === 0x5a ? inserted : undefined),
            ready: () => {},
            error: () => true,
          });
          const passed = Buffer.concat(chunks(Buffer.concat(messages), cuts).flatMap((chunk) => reader.read(chunk)));
          const expected = messages.flatMap((m) => (m[0] === 0x5a ? [inserted, m] : [m]));
          expect(passed.equals(Buffer.concat(expected))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("passes a large message on without copying it: the chunks it was cut into go on as they are", () => {
    const reader = new ServerStreamReader({ started: () => undefined, ready: () => {}, error: () => true });
    const big = message("D", 1_000_000);
    const parts = chunks(big, [65_536, 131_072, 500_000]);
    const passed = parts.flatMap((part) => reader.read(part));
    expect(passed.map((piece) => piece.buffer === big.buffer)).toEqual(passed.map(() => true));
    expect(Buffer.concat(passed).equals(big)).toBe(true);
  });
});
