/**
 * How the client reads a failed mutation: retry with the same key, or give up. The answer comes from the error's
 * `data.idempotency` (set by the server's `idempotencyErrorData`) or the HTTP status, never from its message.
 */
import {
  IDEMPOTENT_REPLAYED_HEADER,
  IDEMPOTENT_RESEND_HEADER,
  type NextStep,
  nextStep,
  Resend,
  resendOf,
} from "@idemkit/core";
import type { TRPCClientError } from "@trpc/client";
import type { AnyTRPCRouter } from "@trpc/server";
import type { IdempotencyErrorData } from "../errors.js";

/** The parts of a Fetch `Response` the client reads. */
export interface ResponseLike {
  status?: number;
  headers?: { get(name: string): string | null };
}

/** The HTTP response behind a tRPC client error, when one arrived. */
export function responseOf(error: unknown): ResponseLike | undefined {
  return isClientError(error) ? (error.meta?.response as ResponseLike | undefined) : undefined;
}

/** Whether an answer came from the server's store (`Idempotent-Replayed: true`): it can never change. */
export function isReplayedAnswer(response: ResponseLike | undefined): boolean {
  return response?.headers?.get(IDEMPOTENT_REPLAYED_HEADER) === "true";
}

/** The error's `data.idempotency` as the server's `idempotencyErrorData` wrote it, when the app's formatter adds it. */
export function idempotencyDataOf(error: unknown): Partial<IdempotencyErrorData> | undefined {
  if (!isClientError(error)) return undefined;
  const data = (error.data as { idempotency?: unknown } | null | undefined)?.idempotency;
  return typeof data === "object" && data !== null ? (data as Partial<IdempotencyErrorData>) : undefined;
}

/**
 * The HTTP status behind a tRPC client error, or undefined when no response arrived (a network failure). A
 * streamed batch answers 200 before its calls finish, so a call's own status (`data.httpStatus`) is read there.
 */
export function statusOf(error: unknown): number | undefined {
  if (!isClientError(error)) return undefined;
  const fromResponse = responseOf(error)?.status;
  const fromData = (error.data as { httpStatus?: unknown } | null | undefined)?.httpStatus;
  if (typeof fromResponse === "number" && (fromResponse >= 300 || typeof fromData !== "number")) return fromResponse;
  return typeof fromData === "number" ? fromData : undefined;
}

/**
 * What the client does next after a failed mutation, by core's one resend rule (`nextStep`): from the server's own
 * word on its refusal (`Idempotent-Resend`, or `data.idempotency.resend` when the app's formatter adds it), else
 * from the response. An error that is not a tRPC client error (thrown by the app's own code) says nothing of the
 * action: it is never resent by itself, and its key is kept.
 */
export function nextStepAfter(error: unknown): NextStep {
  if (!isClientError(error)) return { resend: Resend.NEVER, keepKey: true };
  const headers = responseOf(error)?.headers;
  const data = idempotencyDataOf(error);
  return nextStep({
    status: statusOf(error),
    retryAfter: headers?.get("retry-after") != null,
    replayed: isReplayed(error),
    resend: headers?.get(IDEMPOTENT_RESEND_HEADER) ?? data?.resend ?? (data?.code && resendOf(data.code)),
  });
}

/**
 * True when sending the same mutation again with the same key can succeed (the server was unreachable, busy,
 * or still running the first request); false when it would fail the same way (a 400, a 422 for a key reused
 * with another input, the procedure's own conflict, any replayed answer).
 */
export function isRetryableError(error: unknown): boolean {
  return nextStepAfter(error).resend === Resend.RETRY;
}

/**
 * True when what became of the mutation is not known to the client, so it is worth asking (a lookup with its key):
 * no answer arrived, a refusal that can still end otherwise (still running, the store away), or a call that ran and
 * whose answer was not recorded (`Idempotent-Resend: check`), which the client must not send again by itself.
 */
export function mayHaveRun(error: unknown): boolean {
  return nextStepAfter(error).resend !== Resend.NEVER;
}

/**
 * True when the server answered with a failure it keeps for the key: a 4xx it stores (such as 402, 403, 404 or
 * 422), or any error it replayed (only stored answers replay, so this includes a 5xx kept under the middleware's
 * `storeServerErrors`). Sending the same key again can only replay it until the record expires, so pressing again
 * is a new attempt that needs a new key. False for everything else, including what merely cannot be retried as it
 * is (a procedure's own 409, a 5xx seen for the first time, an answer that never arrived whole, an error thrown by
 * the app's own callback): there the key may still have run, or may still succeed, and must be kept.
 */
export function isStoredRefusal(error: unknown): boolean {
  return !nextStepAfter(error).keepKey;
}

function isReplayed(error: TRPCClientError<AnyTRPCRouter>): boolean {
  return isReplayedAnswer(responseOf(error));
}

/** `instanceof` fails when the app and idemkit load two copies of @trpc/client; the name survives that. */
function isClientError(error: unknown): error is TRPCClientError<AnyTRPCRouter> {
  return error instanceof Error && error.name === "TRPCClientError";
}
