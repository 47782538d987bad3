import { describe, expect, it } from "vitest";
import { IdempotencyError, IdempotencyErrorCode, Resend, resendOf } from "./errors.js";
import { httpStatusOf, refusalHeaders } from "./http-status.js";
import { isStoredStatus, nextStep, nextStepAfterRefusal } from "./resend.js";

const resendAfter = (answer: Parameters<typeof nextStep>[0]) => nextStep(answer).resend;
const keepsKeyAfter = (answer: Parameters<typeof nextStep>[0]) => nextStep(answer).keepKey;

describe("the one resend rule", () => {
  it("stores successes and the 4xx that would fail again; releases 'not now' answers and server errors", () => {
    expect([200, 400, 401, 403, 404, 413, 422].every((status) => isStoredStatus(status))).toBe(true);
    expect([408, 409, 412, 429, 499, 500, 502, 503].some((status) => isStoredStatus(status))).toBe(false);
    expect(isStoredStatus(500, { storeServerErrors: true })).toBe(true);
  });

  it("has clients retry network failures, 5xx, 408, 429, 499 and a 409 that says when, keeping the key", () => {
    for (const status of [undefined, 408, 429, 499, 500, 502, 503, 504]) {
      expect(nextStep({ status })).toEqual({ resend: Resend.RETRY, keepKey: true });
    }
    expect(nextStep({ status: 409, retryAfter: true })).toEqual({ resend: Resend.RETRY, keepKey: true });
  });

  it("has clients follow idemkit's own word on its refusals (Idempotent-Resend) before the status", () => {
    expect(resendAfter({ status: 500, resend: "never" })).toBe(Resend.NEVER);
    expect(resendAfter({ status: 500, resend: "check" })).toBe(Resend.CHECK);
    expect(resendAfter({ status: 503, resend: "retry" })).toBe(Resend.RETRY);
    expect(resendAfter({ status: 409, resend: "retry" })).toBe(Resend.RETRY);
    expect(resendAfter({ status: 503, resend: "retry", replayed: true })).toBe(Resend.NEVER);
    // A word it does not know is no leave to send again.
    expect(resendAfter({ status: 503, resend: "later" })).toBe(Resend.NEVER);
  });

  it("gives up on the procedure's own 409 and 412 and keeps their key; on other 4xx and replayed failures it starts anew", () => {
    for (const status of [409, 412]) expect(nextStep({ status })).toEqual({ resend: Resend.NEVER, keepKey: true });
    for (const status of [400, 401, 403, 404, 413, 422]) {
      expect(nextStep({ status })).toEqual({ resend: Resend.NEVER, keepKey: false });
    }
    expect(nextStep({ status: 500, replayed: true })).toEqual({ resend: Resend.NEVER, keepKey: false });
    expect(nextStep({ status: 409, retryAfter: true, replayed: true })).toEqual({
      resend: Resend.NEVER,
      keepKey: false,
    });
  });

  it("retries exactly what the server releases, except the 409 and 412 a procedure answers itself", () => {
    for (const status of [400, 404, 408, 409, 412, 422, 429, 499, 500, 503]) {
      const released = !isStoredStatus(status);
      const retried = resendAfter({ status }) === Resend.RETRY;
      if (status === 409 || status === 412) expect([released, retried]).toEqual([true, false]);
      else expect(retried).toBe(released);
      // What the server keeps for the key is what a client starts anew after; what it releases keeps the key.
      expect(keepsKeyAfter({ status })).toBe(released);
    }
  });

  it("holds every code: its headers say its resend, and a press after an action that ran never runs it again", () => {
    const after = Object.fromEntries(
      Object.values(IdempotencyErrorCode).map((code) => {
        const headers = new Map(refusalHeaders(new IdempotencyError(code, code, { retryAfterMs: 1_000 })));
        const seen = { status: httpStatusOf(code), resend: headers.get("Idempotent-Resend"), retryAfter: true };
        expect(nextStep(seen)).toEqual(nextStepAfterRefusal(code));
        expect(nextStepAfterRefusal(code).resend).toBe(resendOf(code));
        return [code, nextStepAfterRefusal(code)];
      }),
    );
    const retry = { resend: Resend.RETRY, keepKey: true };
    const anew = { resend: Resend.NEVER, keepKey: false };
    const same = { resend: Resend.NEVER, keepKey: true };
    expect(after).toEqual({
      KEY_MISSING: anew,
      KEY_INVALID: anew,
      IN_PROGRESS: retry,
      FINGERPRINT_MISMATCH: anew,
      KEY_SHARED_IN_BATCH: anew,
      STORE_UNAVAILABLE: retry,
      OUTCOME_UNKNOWN: retry,
      STORE_MISCONFIGURED: same,
      LEASE_LOST: retry,
      // It ran, unrecorded: only asked after, under the same key.
      RAN_UNRECORDED: { resend: Resend.CHECK, keepKey: true },
      // It ran, and a refusal is kept in its answer's place: a new key would run it a second time.
      RAN_WITHOUT_ANSWER: same,
      ROLLED_BACK: same,
      BODY_TOO_LARGE: anew,
      BODY_INVALID: anew,
      BODY_TIMEOUT: retry,
      RATE_LIMITED: retry,
    });
  });
});
