/**
 * How a refusal is said over HTTP: its status, from the one table adapters answer by, whether they speak HTTP
 * themselves (the Fetch adapter) or through a framework's codes (the tRPC middleware maps these statuses to tRPC's);
 * and its headers, so that a client reads what it may do from the answer itself, without the app's error formatter.
 */
import { type IdempotencyError, IdempotencyErrorCode } from "./errors.js";

/**
 * What a client may do with the same key after this answer (`retry`, `check` or `never`: see `Resend`), on every
 * refusal of idemkit's. A status alone cannot say it: a 500 is retried by clients, and some of idemkit's 500s must
 * never be sent again.
 */
export const IDEMPOTENT_RESEND_HEADER = "Idempotent-Resend";

const HTTP_STATUS: Record<IdempotencyErrorCode, number> = {
  [IdempotencyErrorCode.KEY_MISSING]: 400,
  [IdempotencyErrorCode.KEY_INVALID]: 400,
  [IdempotencyErrorCode.KEY_SHARED_IN_BATCH]: 400,
  [IdempotencyErrorCode.BODY_INVALID]: 400,
  [IdempotencyErrorCode.BODY_TIMEOUT]: 408,
  [IdempotencyErrorCode.IN_PROGRESS]: 409,
  [IdempotencyErrorCode.LEASE_LOST]: 409,
  [IdempotencyErrorCode.BODY_TOO_LARGE]: 413,
  [IdempotencyErrorCode.FINGERPRINT_MISMATCH]: 422,
  [IdempotencyErrorCode.RATE_LIMITED]: 429,
  [IdempotencyErrorCode.STORE_MISCONFIGURED]: 500,
  [IdempotencyErrorCode.RAN_UNRECORDED]: 500,
  [IdempotencyErrorCode.RAN_WITHOUT_ANSWER]: 500,
  [IdempotencyErrorCode.ROLLED_BACK]: 500,
  [IdempotencyErrorCode.STORE_UNAVAILABLE]: 503,
  [IdempotencyErrorCode.OUTCOME_UNKNOWN]: 503,
};

/** The HTTP status a refusal with `code` is answered with. */
export function httpStatusOf(code: IdempotencyErrorCode): number {
  return HTTP_STATUS[code];
}

/** The headers a refusal is answered with: `Idempotent-Resend`, and `Retry-After` when it says when to come back. */
export function refusalHeaders(error: IdempotencyError): Array<[name: string, value: string]> {
  const headers: Array<[string, string]> = [[IDEMPOTENT_RESEND_HEADER, error.resend]];
  if (error.retryAfterMs !== undefined) {
    headers.push(["Retry-After", String(Math.max(1, Math.ceil(error.retryAfterMs / 1000)))]);
  }
  return headers;
}
