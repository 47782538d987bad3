/**
 * The HTTP status of each refusal: the one table adapters answer by, whether they speak HTTP themselves (the Fetch
 * adapter) or through a framework's codes (the tRPC middleware maps these statuses to tRPC's).
 */
import { IdempotencyErrorCode } from "./errors.js";

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
  [IdempotencyErrorCode.RESULT_NOT_STORED]: 500,
  [IdempotencyErrorCode.RESULT_NOT_STORABLE]: 500,
  [IdempotencyErrorCode.STORE_UNAVAILABLE]: 503,
  [IdempotencyErrorCode.OUTCOME_UNKNOWN]: 503,
};

/** The HTTP status a refusal with `code` is answered with. */
export function httpStatusOf(code: IdempotencyErrorCode): number {
  return HTTP_STATUS[code];
}
