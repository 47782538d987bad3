/**
 * What is the operator's to read and never a client's: how a store is not set up (its table, a migration, an
 * encryption key's id), why an answer could not be stored (a developer's value that is not plain JSON). A client
 * shown that learns the app's insides and nothing it can act on, so the detail goes to the log, once per distinct
 * message, and the client gets a refusal of the same code that says only what happened to its request.
 */
import { causeChain, IdempotencyError, IdempotencyErrorCode, isIdempotencyError } from "./errors.js";

const PUBLIC_MESSAGES: Partial<Record<IdempotencyErrorCode, string>> = {
  [IdempotencyErrorCode.STORE_MISCONFIGURED]:
    "The server is not set up to protect this request, so it was not run. Its operator has been told.",
};

/**
 * The most distinct details one log remembers having said. Past them the oldest is forgotten (said again if it comes
 * back), so that a flood of one kind (a record per key sealed without its encryption key) never silences another.
 */
const MAX_REMEMBERED = 100;

/** Writes a detail, and what caused it, to the error log the first time this log sees it. */
export type OnceLog = (detail: string, cause?: unknown) => void;

/** A log that says each detail once: one per engine, so each endpoint says what is wrong with it. */
export function onceLog(): OnceLog {
  const said = new Set<string>();
  return (detail, cause) => {
    if (said.has(detail)) return;
    if (said.size >= MAX_REMEMBERED) said.delete(said.values().next().value as string);
    said.add(detail);
    if (cause === undefined) console.error(`idemkit: ${detail}`);
    else console.error(`idemkit: ${detail}\n  caused by ${causesSaid(cause)}`);
  };
}

/**
 * What caused a detail, as the log says it: each error's name, code and message, in the order they wrapped each
 * other, and nothing else. An error printed whole would show every property it carries, and a query's error carries
 * its parameters (a scope, a key, a stored answer, a value a user typed): so no error is printed as an object, and
 * the message of one that carries parameters (Drizzle writes them into its message) is left out.
 */
export function causesSaid(cause: unknown): string {
  const said: string[] = [];
  for (const link of causeChain(cause)) {
    const { name, code, message } = link as { name?: unknown; code?: unknown; message?: unknown };
    let part = typeof name === "string" ? name : "Error";
    if (typeof code === "string" || typeof code === "number") part += ` ${code}`;
    // Drizzle's query error: its message is the query and its parameters (a driver's own carries them apart).
    if ("params" in link) part += " (its query and parameters are not logged)";
    else if (typeof message === "string" && message !== "") part += `: ${message.split("\n", 1)[0]}`;
    said.push(part);
  }
  return said.length > 0 ? said.join("\n  caused by ") : String(cause);
}

/** The log of what no engine of its own says: the lookups' refusals. */
export const processLog: OnceLog = onceLog();

/**
 * `error` as a client may see it: a refusal that carries operator detail is logged once and answered with its
 * public message, the detailed one kept as its cause for the server's own handlers; any other error as it is.
 */
export function withoutOperatorDetail(error: unknown, log: OnceLog = processLog): unknown {
  if (!isIdempotencyError(error)) return error;
  const message = PUBLIC_MESSAGES[error.code];
  if (message === undefined || error.message === message) return error;
  log(error.message, error.cause);
  return new IdempotencyError(error.code, message, {
    cause: error,
    ...(error.retryAfterMs !== undefined && { retryAfterMs: error.retryAfterMs }),
  });
}
