/**
 * The one place where idemkit's error codes become tRPC codes (and so HTTP statuses), and where a client-facing
 * error learns its idempotency code, so clients tell "retry" from "give up" by `data`, never by message.
 */
import {
  httpStatusOf,
  type IdempotencyError,
  type IdempotencyErrorCode,
  isIdempotencyError,
  type Resend,
} from "@idemkit/core";
import { refusalHeaders } from "@idemkit/core/internal";
import { type TRPC_ERROR_CODE_KEY, type TRPCDefaultErrorShape, TRPCError } from "@trpc/server";
import type { IdempotencyHttp } from "./http.js";

/** tRPC's code for each status core answers refusals with (`httpStatusOf`), so both agree by construction. */
const TRPC_CODE_BY_STATUS: Record<number, TRPC_ERROR_CODE_KEY> = {
  400: "BAD_REQUEST",
  408: "TIMEOUT",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  422: "UNPROCESSABLE_CONTENT",
  429: "TOO_MANY_REQUESTS",
  500: "INTERNAL_SERVER_ERROR",
  503: "SERVICE_UNAVAILABLE",
};

/**
 * Converts an idemkit refusal to the TRPCError the client sees, and sets its headers (`Idempotent-Resend`, and
 * `Retry-After` where it applies), so that a client reads what it may do without the app's error formatter.
 */
export function toTRPCError(error: IdempotencyError, http: Pick<IdempotencyHttp, "setHeader"> | undefined): TRPCError {
  for (const [name, value] of refusalHeaders(error)) http?.setHeader?.(name, value);
  const code = TRPC_CODE_BY_STATUS[httpStatusOf(error.code)] ?? "INTERNAL_SERVER_ERROR";
  return new TRPCError({ code, message: error.message, cause: error });
}

/** The idempotency part of an error's `data`, as a client reads it. */
export interface IdempotencyErrorData {
  code: IdempotencyErrorCode;
  /** True when resending the same request with the same key can succeed. */
  retryable: boolean;
  /** What a client may do with the same key: `retry`, `check` what became of it, or `never`. */
  resend: Resend;
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
  return {
    code: cause.code,
    retryable: cause.retryable,
    resend: cause.resend,
    retryAfterMs: cause.retryAfterMs ?? null,
  };
}

/** A procedure's error shape for its refusals once `.errors(idempotencyErrors)` formats them: the code, typed. */
export type IdempotencyErrorShape = TRPCDefaultErrorShape & {
  data: TRPCDefaultErrorShape["data"] & { idempotency: IdempotencyErrorData };
};

/**
 * For tRPC 11.22's per-procedure `.errors()`, where the router's `errorFormatter` cannot carry
 * `idempotencyErrorData` (one shared by several apps). Place it before the middleware, so that it sees the
 * middleware's refusals:
 *
 *   t.procedure.errors(idempotencyErrors).use(idempotency({ store, scope }))
 *
 * The procedure's refusals then carry `data.idempotency`, and skip the app's formatter; its other errors go on to
 * the app's formatter. A client's error for it is typed as the union of both shapes: `"idempotency" in error.data`
 * narrows `error.data` to the refusal's, whose `code` the compiler checks.
 */
export function idempotencyErrors({
  error,
  shape,
}: {
  error: TRPCError;
  shape: TRPCDefaultErrorShape;
}): IdempotencyErrorShape | undefined {
  const idempotency = idempotencyErrorData(error);
  return idempotency ? { ...shape, data: { ...shape.data, idempotency } } : undefined;
}
