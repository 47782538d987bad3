/**
 * The one error family of idemkit. Every refusal the engine makes carries a `code`; adapters (tRPC, HTTP)
 * map codes to their own status in exactly one place, and clients decide "retry or give up" from `retryable`
 * without parsing messages.
 */

/** Why a request was refused or could not be protected. */
export const IdempotencyErrorCode = {
  /** The request carries no `Idempotency-Key`. Terminal: resend with a key. */
  KEY_MISSING: "KEY_MISSING",
  /** The key is empty, longer than 255 characters, or not visible ASCII. Terminal. */
  KEY_INVALID: "KEY_INVALID",
  /** The first request with this key is still running. Retryable after `retryAfterMs`. */
  IN_PROGRESS: "IN_PROGRESS",
  /** The key was used before with a different input. Terminal: a new action needs a new key. */
  FINGERPRINT_MISMATCH: "FINGERPRINT_MISMATCH",
  /** One key was sent for several mutations of one HTTP batch. Terminal: send keyed mutations unbatched. */
  KEY_SHARED_IN_BATCH: "KEY_SHARED_IN_BATCH",
  /** The store could not be reached, so the request was not run. Retryable. */
  STORE_UNAVAILABLE: "STORE_UNAVAILABLE",
  /**
   * The store failed after the request's work was done, before it confirmed keeping it (atomic mode's commit): the
   * work may or may not have been kept. Retryable with the same key, which asks: the retry replays what was kept, or
   * runs the request if nothing was. Never "nothing ran": a new key could do it twice.
   */
  OUTCOME_UNKNOWN: "OUTCOME_UNKNOWN",
  /**
   * The store is reachable but not set up for idemkit (its table is missing, or an older version of it), so the
   * request was not run. Never sent again by itself: retrying changes nothing until an operator migrates. Nothing is
   * kept for the key, so a client's next press may send it again.
   */
  STORE_MISCONFIGURED: "STORE_MISCONFIGURED",
  /** This worker's lease was taken over while it ran; its result was discarded. Retryable: the retry replays. */
  LEASE_LOST: "LEASE_LOST",
  /**
   * Lease mode: the call ran, and its answer could not be recorded while its client waited. The engine keeps trying
   * while the call holds its lease, so a check with the same key soon finds it; but once the lease ends with nothing
   * recorded, the same key runs the call again. So a client never sends it again by itself: it checks (a lookup)
   * and tells its user that it may have gone through. Pass `ctx.idempotency.subKey(...)` downstream, so that a second
   * run is one there too.
   */
  RAN_UNRECORDED: "RAN_UNRECORDED",
  /**
   * Lease mode: the call ran, but its answer could not be made into what is stored (a value the adapter cannot
   * serialize, a body that failed while it was read, a `redact` that threw). The key is kept refused with this, so
   * sending it again gets this again and never runs the work a second time; a new key would run it again.
   */
  RAN_WITHOUT_ANSWER: "RAN_WITHOUT_ANSWER",
  /**
   * Atomic mode: the call's answer could not be made into what is stored, so its transaction was rolled back:
   * nothing it wrote was kept, and nothing is kept for its key. The same request fails the same way until the app
   * is fixed, so it is never sent again by itself; a press with the same key is a new attempt, as one with a new key.
   */
  ROLLED_BACK: "ROLLED_BACK",
  /** The request's body is larger than the adapter reads (the Fetch adapter's `maxBodyBytes`). Terminal. */
  BODY_TOO_LARGE: "BODY_TOO_LARGE",
  /** The request's body cannot be read as its media type says (a malformed multipart form), so nothing ran. Terminal. */
  BODY_INVALID: "BODY_INVALID",
  /** The request's body did not arrive in time (the Fetch adapter's `bodyTimeoutMs`), so nothing ran. Retryable. */
  BODY_TIMEOUT: "BODY_TIMEOUT",
  /**
   * The caller's scope has too many calls running, or started too many new keys lately (the engine's `limits`), so
   * nothing ran. Retryable after `retryAfterMs`.
   */
  RATE_LIMITED: "RATE_LIMITED",
} as const;

export type IdempotencyErrorCode = (typeof IdempotencyErrorCode)[keyof typeof IdempotencyErrorCode];

/**
 * What a client may do after a refusal, with the refused request's key: the one rule every client reads (the link,
 * the hooks, the Server Action form), and the Fetch and tRPC adapters send as the `Idempotent-Resend` header.
 */
export const Resend = {
  /** Send the same request again with the same key (after `retryAfterMs`): it can succeed, and never runs twice. */
  RETRY: "retry",
  /**
   * Never send it again by itself: it ran and its answer is not recorded, and a resend after its lease would run it
   * again. Ask what became of it with the same key (a lookup), and tell the user it may have gone through.
   */
  CHECK: "check",
  /** Never send it again with this key: it would get the same answer. A new action needs a new key. */
  NEVER: "never",
} as const;
export type Resend = (typeof Resend)[keyof typeof Resend];

const RESEND: Record<IdempotencyErrorCode, Resend> = {
  KEY_MISSING: Resend.NEVER,
  KEY_INVALID: Resend.NEVER,
  IN_PROGRESS: Resend.RETRY,
  FINGERPRINT_MISMATCH: Resend.NEVER,
  KEY_SHARED_IN_BATCH: Resend.NEVER,
  STORE_UNAVAILABLE: Resend.RETRY,
  OUTCOME_UNKNOWN: Resend.RETRY,
  STORE_MISCONFIGURED: Resend.NEVER,
  LEASE_LOST: Resend.RETRY,
  RAN_UNRECORDED: Resend.CHECK,
  RAN_WITHOUT_ANSWER: Resend.NEVER,
  ROLLED_BACK: Resend.NEVER,
  BODY_TOO_LARGE: Resend.NEVER,
  BODY_INVALID: Resend.NEVER,
  BODY_TIMEOUT: Resend.RETRY,
  RATE_LIMITED: Resend.RETRY,
};

/** What a client may do with the same key after a refusal with `code`. */
export function resendOf(code: IdempotencyErrorCode): Resend {
  return RESEND[code];
}

const BRAND = Symbol.for("idemkit.IdempotencyError");

/** What an `IdempotencyError` carries besides its code and message: the cause, and when to come back. */
export interface IdempotencyErrorOptions {
  cause?: unknown;
  /** For IN_PROGRESS: how long until the running request's lease ends, in milliseconds. */
  retryAfterMs?: number;
}

/** A refusal by the idempotency layer. Test with {@link isIdempotencyError}, which works across bundles. */
export class IdempotencyError extends Error {
  override readonly name = "IdempotencyError";
  readonly code: IdempotencyErrorCode;
  /** What a client may do with the same key: send it again, check what became of it, or never. */
  readonly resend: Resend;
  /** Whether resending the same request with the same key can succeed (`resend` is `retry`). */
  readonly retryable: boolean;
  /** When set, the earliest useful retry, in milliseconds from now. */
  readonly retryAfterMs: number | undefined;

  constructor(code: IdempotencyErrorCode, message: string, options: IdempotencyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.resend = resendOf(code);
    this.retryable = this.resend === Resend.RETRY;
    this.retryAfterMs = options.retryAfterMs;
    Object.defineProperty(this, BRAND, { value: true });
  }
}

/**
 * True for an {@link IdempotencyError}, even one built by another copy of this package (two bundles, or a
 * server and a test runner), where `instanceof` would say no.
 */
export function isIdempotencyError(value: unknown): value is IdempotencyError {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

const PROCEDURE_BRAND = Symbol.for("idemkit.ProcedureTransactionError");

/**
 * The procedure's own failure, reported by a store in atomic mode: one of its statements failed, it caught the
 * error and went on, but PostgreSQL had aborted its transaction, so nothing it wrote could be committed. Not a
 * store failure (which would say "not run, retry later"): the key is released and this error is the answer.
 */
export class ProcedureTransactionError extends Error {
  override readonly name = "ProcedureTransactionError";

  constructor(path: string, cause: unknown) {
    super(
      `${path} went on after one of its statements failed, but PostgreSQL had aborted its transaction, so ` +
        "nothing it wrote could be committed. Run a statement that may fail in a savepoint and catch around it: " +
        "await tx.transaction(async (savepoint) => savepoint.insert(...)).",
      { cause },
    );
    Object.defineProperty(this, PROCEDURE_BRAND, { value: true });
  }
}

/** True for a {@link ProcedureTransactionError}, even one built by another copy of this package. */
export function isProcedureTransactionError(value: unknown): value is ProcedureTransactionError {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[PROCEDURE_BRAND] === true;
}

const BYPASS_BRAND = Symbol.for("idemkit.TransactionBypassError");

/**
 * A statement a protected procedure sent through the database itself while its idempotent transaction holds the
 * only connection: it would wait for ever, so a store refuses it at once. The driver (or Drizzle, which wraps what
 * the driver throws) may hand it on as the cause of its own error; adapters answer with this one's message, which
 * names the fix.
 */
export class TransactionBypassError extends Error {
  override readonly name = "TransactionBypassError";

  constructor(message: string) {
    super(message);
    Object.defineProperty(this, BYPASS_BRAND, { value: true });
  }
}

/** The {@link TransactionBypassError} that `error` is or was caused by, even one built by another copy. */
export function transactionBypassIn(error: unknown): TransactionBypassError | undefined {
  for (const current of causeChain(error)) {
    if ((current as Record<symbol, unknown>)[BYPASS_BRAND] === true) return current as TransactionBypassError;
  }
  return undefined;
}

/** `error`, then what caused it, and so on: where wrappers (Drizzle's query errors, tRPC's) put the error they wrap. */
export function* causeChain(error: unknown): Generator<object> {
  // A cause that leads back to an error already seen (one that names itself, say) ends the chain there.
  const seen = new Set<object>();
  for (let current = error; typeof current === "object" && current !== null && !seen.has(current); ) {
    seen.add(current);
    yield current;
    current = (current as { cause?: unknown }).cause;
  }
}
