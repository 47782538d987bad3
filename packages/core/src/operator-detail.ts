/**
 * What is the operator's to read and never a client's: how a store is not set up (its table, a migration, an
 * encryption key's id), why an answer could not be stored (a developer's value that is not plain JSON). A client
 * shown that learns the app's insides and nothing it can act on, so the detail goes to the log, once per distinct
 * message, and the client gets a refusal of the same code that says only what happened to its request.
 */
import { IdempotencyError, IdempotencyErrorCode, isIdempotencyError } from "./errors.js";

const PUBLIC_MESSAGES: Partial<Record<IdempotencyErrorCode, string>> = {
  [IdempotencyErrorCode.STORE_MISCONFIGURED]:
    "The server is not set up to protect this request, so it was not run. Its operator has been told.",
};

/** The most distinct details one log keeps saying: past them a broken deploy is already in the log many times over. */
const MAX_LOGGED = 100;

/** Writes a detail to the error log the first time it is seen by this log. */
export type OnceLog = (detail: string, cause?: unknown) => void;

/** A log that says each detail once: one per engine, so each endpoint says what is wrong with it. */
export function onceLog(): OnceLog {
  const logged = new Set<string>();
  return (detail, cause) => {
    if (logged.has(detail) || logged.size >= MAX_LOGGED) return;
    logged.add(detail);
    if (cause === undefined) console.error(`idemkit: ${detail}`);
    else console.error(`idemkit: ${detail}`, cause);
  };
}

/** The log of what is not said by an engine of its own (a lookup, an adapter's own refusals). */
export const logOnce: OnceLog = onceLog();

/**
 * `error` as a client may see it: a refusal that carries operator detail is logged once and answered with its
 * public message, the detailed one kept as its cause for the server's own handlers; any other error as it is.
 */
export function withoutOperatorDetail(error: unknown, log: OnceLog = logOnce): unknown {
  if (!isIdempotencyError(error)) return error;
  const message = PUBLIC_MESSAGES[error.code];
  if (message === undefined || error.message === message) return error;
  log(error.message);
  return new IdempotencyError(error.code, message, {
    cause: error,
    ...(error.retryAfterMs !== undefined && { retryAfterMs: error.retryAfterMs }),
  });
}
