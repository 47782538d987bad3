/**
 * How a protected call ended, as telemetry counts it (`CallOutcome`, a metric attribute and a channel message's
 * `outcome`), and what the diagnostics channels carry of a call and of a decision.
 */
import { IdempotencyErrorCode, isIdempotencyError } from "../errors.js";
import type { ErrorSummary } from "../observing.js";
import type { IdempotencyEvent, IdempotencyMode, RunResult, Settlement } from "./types.js";

/** How a protected call ended, as telemetry counts it. */
export const CallOutcome = {
  /** It ran, and its answer was stored. */
  EXECUTED: "executed",
  /** A stored answer was sent again. */
  REPLAYED: "replayed",
  /** The key was held by a call still running: answered IN_PROGRESS. */
  CONFLICT: "conflict",
  /** The key came with another input: answered FINGERPRINT_MISMATCH. */
  MISMATCH: "mismatch",
  /** It ran and failed, or answered what is not kept (a 5xx): the key was released, a retry runs again. */
  RELEASED: "released",
  /**
   * The store failed or is not set up: answered STORE_UNAVAILABLE or STORE_MISCONFIGURED, and nothing ran; or
   * OUTCOME_UNKNOWN, when it failed to confirm the commit of a call that ran.
   */
  STORE_ERROR: "store_error",
  /**
   * It ran, but its answer could not be stored (not serializable, or `redact` threw): in lease mode a refusal is
   * kept for its key in the answer's place, RAN_WITHOUT_ANSWER, and so is a retry with it answered; in atomic mode
   * its transaction was rolled back, ROLLED_BACK.
   */
  UNSTORABLE: "unstorable",
  /** Lease mode: its lease was taken over while it ran; its answer was discarded. */
  LEASE_LOST: "lease_lost",
  /** Lease mode: it ran, and its answer could not be recorded while its client waited: RAN_UNRECORDED. */
  UNRECORDED: "unrecorded",
  /** Its scope was over the engine's `limits`: answered RATE_LIMITED; nothing ran. */
  RATE_LIMITED: "rate_limited",
  /**
   * Lease mode: it ran past `procedureTimeoutMs` and was answered IN_PROGRESS while its work went on. It is counted
   * when that work is done, and stays in flight until then.
   */
  TIMED_OUT: "timed_out",
} as const;
export type CallOutcome = (typeof CallOutcome)[keyof typeof CallOutcome];

/** What `idemkit:call` subscribers get, once per call. The scope (a user id) is never in it. */
export interface CallMessage {
  path: string;
  key: string;
  mode: IdempotencyMode;
  outcome: CallOutcome;
  durationMs: number;
  /**
   * Of that, how long it waited for another call with its key: in memory, or between reads of the key. A claim that
   * waits on the row of a call on another instance is the store's time.
   */
  waitedMs: number;
  /** Of that, how long idemkit's store work took: its statements, BEGIN and COMMIT, waiting for a connection. */
  storeMs: number;
  /** For a call that threw: what it threw (the refusal, or the procedure's failure). */
  error?: ErrorSummary;
}

/**
 * What `idemkit:event` subscribers get: each decision as `onEvent` gets it, its error summed up, and its scope only
 * with `include: { scope: true }`.
 */
export interface EventMessage extends Omit<IdempotencyEvent, "scope" | "error"> {
  scope?: string;
  error?: ErrorSummary;
}

/** The outcome of a call that resolved. */
export function resolvedOutcome(result: RunResult<unknown>, settlement: Settlement<unknown> | undefined): CallOutcome {
  if (result.replayed) return CallOutcome.REPLAYED;
  return settlement?.response ? CallOutcome.EXECUTED : CallOutcome.RELEASED;
}

/** The outcome of a call that threw: one of idemkit's refusals, or the procedure's own failure (its key released). */
export function thrownOutcome(error: unknown): CallOutcome {
  if (!isIdempotencyError(error)) return CallOutcome.RELEASED;
  switch (error.code) {
    case IdempotencyErrorCode.IN_PROGRESS:
      return CallOutcome.CONFLICT;
    case IdempotencyErrorCode.FINGERPRINT_MISMATCH:
      return CallOutcome.MISMATCH;
    case IdempotencyErrorCode.LEASE_LOST:
      return CallOutcome.LEASE_LOST;
    case IdempotencyErrorCode.RAN_UNRECORDED:
      return CallOutcome.UNRECORDED;
    case IdempotencyErrorCode.RATE_LIMITED:
      return CallOutcome.RATE_LIMITED;
    case IdempotencyErrorCode.RAN_WITHOUT_ANSWER:
    case IdempotencyErrorCode.ROLLED_BACK:
      return CallOutcome.UNSTORABLE;
    default:
      return CallOutcome.STORE_ERROR;
  }
}
