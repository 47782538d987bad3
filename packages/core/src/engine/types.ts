/** The engine's vocabulary: its events and modes, its options, and what a request, its work and its answer are. */
import type { MeterProvider, TracerProvider } from "@opentelemetry/api";
import type { IdempotencyStore, ModesOf, ModeTransaction, RecordId, StoredResponse } from "../store.js";
import type { CallLimits } from "./limits.js";

/** Every decision the engine takes, so apps can log and count them. */
export const IdempotencyEventType = {
  /** The request ran and its response was stored (or, for a 5xx, released). */
  EXECUTED: "executed",
  /** A stored response was replayed instead of running the request. */
  REPLAYED: "replayed",
  /** The key was in use by a running request: answered IN_PROGRESS. */
  CONFLICT: "conflict",
  /** The key was used before with another input: answered FINGERPRINT_MISMATCH. */
  MISMATCH: "mismatch",
  /** A running request's lease had ended (it crashed or hung): this request took the key over and ran. */
  TAKEOVER: "takeover",
  /** The request failed in a way worth retrying; its record was deleted (or rolled back) so a retry runs. */
  RELEASED: "released",
  /** This request's lease was taken over while it ran; its result was discarded. */
  LEASE_LOST: "lease_lost",
  /**
   * Lease mode: the request ran past `procedureTimeoutMs` and was answered IN_PROGRESS while its work goes on; the
   * work's outcome is stored (or released) once it settles, and reported then as usual.
   */
  TIMED_OUT: "timed_out",
  /**
   * Lease mode: the request ran, but its answer could not be stored (not serializable, or `redact` threw): a refusal
   * is kept for its key, RAN_WITHOUT_ANSWER, and this is said again for each retry it answers. (In atomic mode the
   * transaction is rolled back instead, reported `released`.)
   */
  RAN_WITHOUT_ANSWER: "ran_without_answer",
  /**
   * Lease mode: the request ran, and storing its answer kept failing while its client waited: answered
   * RAN_UNRECORDED. The engine goes on trying while it holds the lease; `executed` follows if it gets through.
   */
  RAN_UNRECORDED: "ran_unrecorded",
  /**
   * The store failed: the request was refused with STORE_UNAVAILABLE and did not run, or, when the commit of one
   * that ran was not confirmed, with OUTCOME_UNKNOWN.
   */
  STORE_ERROR: "store_error",
} as const;
export type IdempotencyEventType = (typeof IdempotencyEventType)[keyof typeof IdempotencyEventType];

export interface IdempotencyEvent extends RecordId {
  type: IdempotencyEventType;
  /** For `conflict` and `timed_out`: when a retry can succeed, in ms from now. */
  retryAfterMs?: number;
  /** For `store_error`, `released` and `ran_unrecorded`: what went wrong. */
  error?: unknown;
}

/** The mode a request runs in; see the module comment. */
export const IdempotencyMode = { ATOMIC: "atomic", LEASE: "lease" } as const;
export type IdempotencyMode = (typeof IdempotencyMode)[keyof typeof IdempotencyMode];

/** What `createIdempotencyEngine` takes: the store, the mode, and how long each part of a call may take. */
export interface IdempotencyEngineOptions<Tx> {
  /** Where records live. */
  store: IdempotencyStore<Tx>;
  /** `atomic` when the store supports it (the default then), else `lease`. */
  mode?: IdempotencyMode;
  /** How long a completed record is replayed, in ms. Default 24 hours. */
  ttlMs?: number;
  /**
   * Lease mode: how long a claim protects a running request, in ms, before a retry may take over. A running call
   * renews it every third of that, so only a crashed (or hung) call lets it run out; a crash blocks the key this
   * long. Default 60 seconds.
   */
  leaseMs?: number;
  /**
   * How long a client is told to wait before retrying while the first call with its key still runs (the 409's
   * `Retry-After`), in ms: in atomic mode once the store's wait limit passed, in lease mode at most the remaining
   * lease. Default 1 s.
   */
  busyRetryAfterMs?: number;
  /**
   * Lease mode: the longest a running request keeps its key by renewing its lease, in ms. A call still running
   * then is let go like a crashed one: its lease runs out and a retry may take over. Default 15 minutes.
   */
  maxHoldMs?: number;
  /**
   * The longest one store call may take, in ms: a lease-mode claim, completion or release; in atomic mode the
   * claim once its wait for a running duplicate is over, and the commit. Past it the request is answered 503
   * `STORE_UNAVAILABLE` with `Retry-After` instead of waiting on a database (or driver) that does not answer.
   * Default 5 seconds.
   */
  storeTimeoutMs?: number;
  /**
   * Atomic mode: the longest the idempotent transaction may stay open, procedure included, in ms. Past it the
   * transaction is rolled back (its statements refused from then on) and the request is answered 503
   * `STORE_UNAVAILABLE`, so a hung procedure or connection never holds a request, or a key, for ever. Default 30 s.
   */
  transactionTimeoutMs?: number;
  /**
   * Lease mode: the longest the client waits for the procedure, in ms. Past it the request is answered 409
   * `IN_PROGRESS` with `Retry-After` (a retry with the same key gets the answer once there is one) and the work's
   * signal aborts (`ctx.idempotency.signal` in the tRPC middleware); the key stays claimed, its lease renewed up to `maxHoldMs`, until the work settles, as work that
   * left the database (a charge on its way) cannot be undone by stopping to wait for it. `Infinity` turns it off;
   * atomic mode has `transactionTimeoutMs` instead. Default 30 s.
   */
  procedureTimeoutMs?: number;
  /**
   * Lease mode: handed the settling of a call that was answered at `procedureTimeoutMs` while its work goes on, for
   * platforms that stop a request's work once it is answered: `waitUntil: after` with Next.js's `after` from
   * `next/server`, or Vercel's `waitUntil`. Without it
   * there, a frozen instance is a crashed call (its lease runs out, and a retry takes over). A throw is logged.
   */
  waitUntil?: (settling: Promise<unknown>) => void;
  /** Completed records kept in memory for cheap replays. 0 turns the cache off. Default 10,000. */
  replayCacheSize?: number;
  /** The clock, in ms since the epoch. Injected so tests can move time; stores never read their own. */
  now?: () => number;
  /** Called once per decision, after the transaction it was taken in has ended. A throw is logged and ignored. */
  onEvent?: (event: IdempotencyEvent) => void;
  /**
   * Where spans and metrics go (see `engine/telemetry.ts` for their names): the global OpenTelemetry providers by
   * default, which are no-ops until the app registers an SDK; these providers instead; or false for none.
   */
  telemetry?: TelemetryOptions | false;
  /**
   * Abuse limits per scope, in this process: `inFlightPerScope` calls running at once, `newKeysPerScope` new keys
   * per window (`{ max, windowMs }`). A call past either is refused RATE_LIMITED (429 with `Retry-After`), and
   * nothing runs. Off by default.
   */
  limits?: CallLimits;
  /**
   * What is kept of an answer's body: it gets the body as the adapter serialized it (JSON for idemkit's adapters)
   * and returns what to store and replay in its place, without what must not be stored (a card number, a token).
   * The first caller gets the whole answer; every replay, from the store or the cache, gets this; the status stays.
   * It runs after the work: a throw (or no string) never releases the key for the work to run again: lease mode
   * keeps it refused, RAN_WITHOUT_ANSWER; atomic mode rolls the work back, ROLLED_BACK.
   */
  redact?: (body: string, id: RecordId) => string;
}

/** Identity and fingerprint of one request. */
export interface IdempotentRequest extends RecordId {
  fingerprint: string;
}

/** What `execute` hands the work. */
export interface Execution<Tx> {
  /** Atomic mode: the transaction to write with. Lease mode: undefined. */
  tx: Tx | undefined;
  /**
   * Lease mode: aborts when the request's lease is lost (taken over, or held past `maxHoldMs`), after which its
   * result can no longer be stored, or when it ran past `procedureTimeoutMs` and its client was answered. Atomic
   * mode: never aborts (the transaction holds the key, and `transactionTimeoutMs` rolls it back).
   */
  signal: AbortSignal;
  /**
   * Builds the work's answer once the work has run: an adapter serializes its value or reads its body here. A throw
   * here is not the work failing, so the key is not released for a retry to run the work again: a refusal is kept
   * for it instead in lease mode (RAN_WITHOUT_ANSWER), which this call and every retry with its key are answered
   * with; in atomic mode the work is rolled back (ROLLED_BACK).
   */
  answer<A>(build: () => A | Promise<A>): Promise<A>;
}

/**
 * What the work produced. `response` is stored and replayed from then on; leave it undefined to release the
 * key instead (a 5xx, or anything the client should retry with the same key). A response with a status of 400 or
 * more is stored, but in atomic mode the work's writes are rolled back first.
 */
export interface Settlement<T> {
  value: T;
  response: StoredResponse | undefined;
}

/** What `engine.run` answers: the work's own value on a first run, or the stored response it replays. */
export type RunResult<T> = { replayed: false; value: T } | { replayed: true; response: StoredResponse };

/** How the engine's parts report a decision. */
export type Emit = (type: IdempotencyEventType, id: RecordId, extra?: Partial<IdempotencyEvent>) => void;

/** The engine options only atomic mode reads. */
export type AtomicModeOptions = Pick<IdempotencyEngineOptions<unknown>, "transactionTimeoutMs">;

/** The engine options only lease mode reads. */
export type LeaseModeOptions = Pick<
  IdempotencyEngineOptions<unknown>,
  "leaseMs" | "maxHoldMs" | "procedureTimeoutMs" | "waitUntil"
>;

/** Options refused: set, they do not compile, and the compiler's message names the mode they belong to. */
type Refused<T, TMode extends IdempotencyMode> = {
  [K in keyof T]?: `${K & string} is an option of ${TMode} mode only`;
};

/**
 * The mode-specific options a call in `TMode` takes, for adapters to type theirs with: its own mode's, the other
 * mode's refused (`leaseMs` in atomic mode is a compile error, not an option silently ignored); both while the mode
 * is not known from the store's type.
 */
export type ModeOptions<TMode> = [TMode] extends ["atomic"]
  ? AtomicModeOptions & Refused<LeaseModeOptions, "lease">
  : [TMode] extends ["lease"]
    ? LeaseModeOptions & Refused<AtomicModeOptions, "atomic">
    : AtomicModeOptions & LeaseModeOptions;

/**
 * What every adapter takes in either mode: the store, the mode, and the engine's options but the mode-specific ones
 * (an adapter adds `ModeOptions<TMode>` for those, and its own way of reading a call's scope).
 */
export interface AdapterOptions<TStore extends IdempotencyStore<unknown>, TMode extends IdempotencyMode>
  extends Omit<
    IdempotencyEngineOptions<ModeTransaction<TStore, "atomic">>,
    "store" | "mode" | keyof AtomicModeOptions | keyof LeaseModeOptions
  > {
  /** Where records live: `drizzleStore({ db })` in production, `memoryStore()` in unit tests. */
  store: TStore;
  /** `atomic` (the default with a store that has it) or `lease`; see the engine's options. */
  mode?: TMode & ModesOf<TStore>;
}

/**
 * Where the engine's telemetry goes (the global OpenTelemetry providers by default, or these; false for none), and
 * what of the app's own data it carries.
 */
export interface TelemetryOptions {
  tracerProvider?: TracerProvider;
  meterProvider?: MeterProvider;
  /**
   * What spans and channel messages carry of the app's own data, which may be personal (a user's id or email) or
   * secret (an input, a connection string in a driver's message), and which anyone subscribed to a channel or reading
   * a trace would see. Each is off by default; metrics never carry either.
   */
  include?: {
    /** `idemkit:event` messages carry the call's `scope`. Default false. */
    scope?: boolean;
    /**
     * Errors carry their message: a channel message's `error.message`, and a span's exception event its
     * `exception.message` and `exception.stacktrace`. Default false: an error is told by its name and code alone.
     */
    errorMessages?: boolean;
  };
}
