/**
 * The one place where idemkit's error codes become tRPC codes (and so HTTP statuses), and where a client-facing
 * error learns its idempotency code, so clients tell "retry" from "give up" by `data`, never by message.
 */
import { type IdempotencyError, IdempotencyErrorCode, isIdempotencyError } from "@idemkit/core";
import { type TRPC_ERROR_CODE_KEY, TRPCError } from "@trpc/server";
import type { IdempotencyHttp } from "./http.js";

const TRPC_CODE: Record<IdempotencyErrorCode, TRPC_ERROR_CODE_KEY> = {
  [IdempotencyErrorCode.KEY_MISSING]: "BAD_REQUEST",
  [IdempotencyErrorCode.KEY_INVALID]: "BAD_REQUEST",
  [IdempotencyErrorCode.KEY_SHARED_IN_BATCH]: "BAD_REQUEST",
  [IdempotencyErrorCode.FINGERPRINT_MISMATCH]: "UNPROCESSABLE_CONTENT",
  [IdempotencyErrorCode.IN_PROGRESS]: "CONFLICT",
  [IdempotencyErrorCode.LEASE_LOST]: "CONFLICT",
  [IdempotencyErrorCode.STORE_UNAVAILABLE]: "SERVICE_UNAVAILABLE",
  [IdempotencyErrorCode.STORE_MISCONFIGURED]: "INTERNAL_SERVER_ERROR",
  [IdempotencyErrorCode.RESULT_NOT_STORED]: "INTERNAL_SERVER_ERROR",
};

/** Converts an idemkit refusal to the TRPCError the client sees, and sets `Retry-After` where it applies. */
export function toTRPCError(error: IdempotencyError, http: Pick<IdempotencyHttp, "setHeader"> | undefined): TRPCError {
  if (error.retryAfterMs !== undefined) {
    http?.setHeader?.("Retry-After", String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))));
  }
  return new TRPCError({ code: TRPC_CODE[error.code], message: error.message, cause: error });
}

/** The idempotency part of an error's `data`, as a client reads it. */
export interface IdempotencyErrorData {
  code: IdempotencyErrorCode;
  /** True when resending the same request with the same key can succeed. */
  retryable: boolean;
  /** When set, the earliest useful retry, in ms. */
  retryAfterMs: number | null;
}

/**
 * For your `errorFormatter`: the idempotency code of an error, or null for other errors. Put it in the shape's
 * `data` so clients (the idemkit link and hook) can decide without parsing messages:
 *
 *   errorFormatter: ({ shape, error }) => ({ ...shape, data: { ...shape.data, idempotency: idempotencyErrorData(error) } })
 */
export function idempotencyErrorData(error: TRPCError): IdempotencyErrorData | null {
  const { cause } = error;
  if (!isIdempotencyError(cause)) return null;
  return { code: cause.code, retryable: cause.retryable, retryAfterMs: cause.retryAfterMs ?? null };
}
