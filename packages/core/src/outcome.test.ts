import { describe, expect, it } from "vitest";
import { IdempotencyErrorCode, isRetryableCode, resendOf } from "./errors.js";
import { httpStatusOf } from "./http-status.js";
import { isRetryableAnswer, isStoredStatus } from "./outcome.js";

describe("the one classification of answers", () => {
  it("stores successes and the 4xx that would fail again; releases 'not now' answers and server errors", () => {
    expect([200, 400, 401, 403, 404, 413, 422].every((status) => isStoredStatus(status))).toBe(true);
    expect([408, 409, 412, 429, 499, 500, 502, 503].some((status) => isStoredStatus(status))).toBe(false);
    expect(isStoredStatus(500, { storeServerErrors: true })).toBe(true);
  });

  it("has clients retry network failures, 5xx, 408, 429, 499 and a 409 that says when", () => {
    const retried = [undefined, 408, 429, 499, 500, 502, 503, 504].map((status) => isRetryableAnswer({ status }));
    expect(retried.every(Boolean)).toBe(true);
    expect(isRetryableAnswer({ status: 409, retryAfter: true })).toBe(true);
  });

  it("has clients follow idemkit's own word on its refusals (Idempotent-Resend) before the status", () => {
    expect(isRetryableAnswer({ status: 500, resend: "never" })).toBe(false);
    expect(isRetryableAnswer({ status: 500, resend: "check" })).toBe(false);
    expect(isRetryableAnswer({ status: 503, resend: "retry" })).toBe(true);
    expect(isRetryableAnswer({ status: 409, resend: "retry" })).toBe(true);
    expect(isRetryableAnswer({ status: 503, resend: "retry", replayed: true })).toBe(false);
    // Every code says what it is, and only "retry" is retried.
    for (const code of Object.values(IdempotencyErrorCode)) {
      expect(isRetryableAnswer({ status: httpStatusOf(code), resend: resendOf(code) })).toBe(isRetryableCode(code));
    }
  });

  it("has clients give up on the procedure's own 409 and 412, other 4xx, and anything replayed", () => {
    const terminal = [400, 401, 403, 404, 409, 412, 413, 422].map((status) => isRetryableAnswer({ status }));
    expect(terminal.some(Boolean)).toBe(false);
    expect(isRetryableAnswer({ status: 500, replayed: true })).toBe(false);
    expect(isRetryableAnswer({ status: 409, retryAfter: true, replayed: true })).toBe(false);
  });

  it("retries exactly what the server releases, except the 409 and 412 a procedure answers itself", () => {
    for (const status of [400, 404, 408, 409, 412, 422, 429, 499, 500, 503]) {
      const released = !isStoredStatus(status);
      const retried = isRetryableAnswer({ status });
      if (status === 409 || status === 412) expect([released, retried]).toEqual([true, false]);
      else expect(retried).toBe(released);
    }
  });
});
