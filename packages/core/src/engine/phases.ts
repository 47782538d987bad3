/**
 * A call's life, phase by phase, and the one table of what a failure in each phase means for the work: its code
 * (which gives its status and what a client may do, `errors.ts`) and what the caller is told. The runs only say
 * which phase they are in; past admission (a scope over its `limits`, RATE_LIMITED in `limits.ts`), no code is
 * chosen anywhere else in the engine.
 *
 *   atomic:  connecting ─▶ claiming ─▶ working ─▶ answering ─▶ committing ─▶ answered
 *   lease:                 claiming ─▶ working ─▶ answering ─▶ recording  ─▶ answered
 *
 * Up to `claiming` nothing ran. In atomic mode everything up to `committing` is rolled back with the transaction,
 * so a failure there is still "nothing kept"; `committing` is the one phase whose failure leaves the outcome
 * unknown. In lease mode the work leaves the database as it runs, so from `working` on the key is never released
 * for the work to run again.
 */
import { IdempotencyError, IdempotencyErrorCode, type IdempotencyErrorOptions } from "../errors.js";

/** Where a call is. */
export const CallPhase = {
  /** Atomic mode: waiting for a connection, or for its transaction to begin. */
  CONNECTING: "connecting",
  /** Claiming the key: in atomic mode inside the transaction, in lease mode a statement of its own. */
  CLAIMING: "claiming",
  /** The work runs: inside the transaction (atomic), or outside any, under a renewed lease (lease). */
  WORKING: "working",
  /** The work ran; its answer is being made into what is stored (an adapter serializes, `redact` runs). */
  ANSWERING: "answering",
  /** Atomic mode: the answer is written and the transaction committed. */
  COMMITTING: "committing",
  /** Lease mode: the answer is written under the call's fence. */
  RECORDING: "recording",
} as const;
export type CallPhase = (typeof CallPhase)[keyof typeof CallPhase];

/**
 * How a phase failed: the store failed, a bound ran out, (lease mode) another call took the key over; or, claiming,
 * the key was found held by a call still running, or used before with another input.
 */
export type PhaseFailure = "failed" | "timedOut" | "lost" | "held" | "mismatched";

/** The bounds a phase's message names. */
export interface PhaseBounds {
  waitMs: number;
  storeTimeoutMs: number;
  transactionTimeoutMs: number;
  procedureTimeoutMs: number;
}

/** What a failure is answered with: its code, and what the caller is told. */
interface Refusal {
  code: IdempotencyErrorCode;
  message: string | ((bounds: PhaseBounds) => string);
}

const NOT_RUN = "The idempotency store is unavailable, so the request was not run; retry later.";
const NOTHING_KEPT =
  "The database failed during the request's transaction, so none of its writes were kept; retry later.";
const UNKNOWN =
  "The database failed before confirming the commit, so this request's outcome is unknown; retry with the same key " +
  "to get it.";

const unavailable = (message: Refusal["message"]): Refusal => ({
  code: IdempotencyErrorCode.STORE_UNAVAILABLE,
  message,
});

const noConnection = unavailable(
  ({ waitMs }) => `No database connection was free within ${waitMs} ms, so the request was not run; retry later.`,
);

/** What a claim that finds the key taken is answered with, in either mode. */
const TAKEN = {
  held: {
    code: IdempotencyErrorCode.IN_PROGRESS,
    message: "A request with this Idempotency-Key is still being processed; retry later.",
  },
  mismatched: {
    code: IdempotencyErrorCode.FINGERPRINT_MISMATCH,
    message: "This Idempotency-Key was already used with a different request body; use a new key for a new request.",
  },
} as const satisfies Record<"held" | "mismatched", Refusal>;

/** What each way a phase can fail is answered with. */
type Table = { readonly [P in CallPhase]?: { readonly [F in PhaseFailure]?: Refusal } };
/** The ways a call in a table's mode can end in a refusal: a phase, and how it failed there. */
type Ending<T> = { [P in keyof T]: readonly [phase: P, failure: keyof T[P] & PhaseFailure] }[keyof T];

const ATOMIC = {
  [CallPhase.CONNECTING]: { failed: unavailable(NOT_RUN), timedOut: noConnection },
  [CallPhase.CLAIMING]: {
    ...TAKEN,
    failed: unavailable(NOT_RUN),
    timedOut: unavailable(
      "The idempotency store did not answer the claim in time, so the request was not run; retry later.",
    ),
  },
  [CallPhase.WORKING]: {
    failed: unavailable(NOTHING_KEPT),
    timedOut: unavailable(
      ({ transactionTimeoutMs }) =>
        `The request's transaction was open for more than ${transactionTimeoutMs} ms and was rolled back, so none ` +
        "of its writes were kept; retry later.",
    ),
  },
  [CallPhase.ANSWERING]: {
    failed: {
      code: IdempotencyErrorCode.ROLLED_BACK,
      message:
        "The request's answer could not be stored, so nothing it did was kept. It fails the same way until the " +
        "server is fixed.",
    },
  },
  [CallPhase.COMMITTING]: {
    failed: { code: IdempotencyErrorCode.OUTCOME_UNKNOWN, message: UNKNOWN },
    timedOut: {
      code: IdempotencyErrorCode.OUTCOME_UNKNOWN,
      message: ({ storeTimeoutMs }) =>
        `The database did not confirm the commit within ${storeTimeoutMs} ms, so this request's outcome is ` +
        "unknown; retry with the same key to get it.",
    },
  },
} as const satisfies Table;

const LEASE = {
  [CallPhase.CLAIMING]: { ...TAKEN, failed: unavailable(NOT_RUN) },
  [CallPhase.WORKING]: {
    timedOut: {
      code: IdempotencyErrorCode.IN_PROGRESS,
      message: ({ procedureTimeoutMs }) =>
        `The request ran longer than ${procedureTimeoutMs} ms and may still be under way; retry with the same ` +
        "Idempotency-Key for its answer.",
    },
  },
  // The one refusal kept as a key's answer (stored-refusal.ts): every retry with the key is answered it.
  [CallPhase.ANSWERING]: {
    failed: {
      code: IdempotencyErrorCode.RAN_WITHOUT_ANSWER,
      message:
        "The request ran, but its answer could not be kept; sending it again with this Idempotency-Key gets this " +
        "answer and does not run it again.",
    },
  },
  [CallPhase.RECORDING]: {
    failed: {
      code: IdempotencyErrorCode.RAN_UNRECORDED,
      message:
        "The request ran, but its answer could not be recorded yet. It may have gone through: check what became " +
        "of it with the same Idempotency-Key before sending it again, as a resend after its lease may run it again.",
    },
    lost: {
      code: IdempotencyErrorCode.LEASE_LOST,
      message:
        "This request ran past its lease and another took over; its result was discarded. Retry to get the " +
        "stored one.",
    },
  },
} as const satisfies Table;

/** How an atomic-mode call can end refused: the phase, and how it failed there. */
export type AtomicEnding = Ending<typeof ATOMIC>;
/** How a lease-mode call can end refused: the phase, and how it failed there. */
export type LeaseEnding = Ending<typeof LEASE>;

/**
 * The refusals of one engine's calls, its bounds in their messages: the one place the engine picks a code. A call
 * names where and how it ended; the compiler refuses an ending its mode does not have.
 */
export function refusalsOf(bounds: PhaseBounds) {
  const refuse = (
    table: Table,
    [phase, failure]: readonly [CallPhase, PhaseFailure],
    options?: IdempotencyErrorOptions,
  ) => {
    // The endings' types let a run name only the entries its mode's table has.
    const { code, message } = (table as Record<CallPhase, Record<PhaseFailure, Refusal>>)[phase][failure];
    return new IdempotencyError(code, typeof message === "string" ? message : message(bounds), options);
  };
  return {
    atomic: (ending: AtomicEnding, options?: IdempotencyErrorOptions) => refuse(ATOMIC, ending, options),
    lease: (ending: LeaseEnding, options?: IdempotencyErrorOptions) => refuse(LEASE, ending, options),
    /** A claim that found the key taken, which either mode answers alike. */
    taken: (failure: keyof typeof TAKEN, options?: IdempotencyErrorOptions) =>
      refuse(ATOMIC, [CallPhase.CLAIMING, failure], options),
  };
}

/** The refusal a lease-mode key is kept with once its work ran and its answer could not be stored. */
export const KEPT_REFUSAL_CODE = LEASE[CallPhase.ANSWERING].failed.code;

/** The refusal a key kept refused answers every retry with. */
export function keptRefusal(): IdempotencyError {
  const { code, message } = LEASE[CallPhase.ANSWERING].failed;
  return new IdempotencyError(code, message);
}
