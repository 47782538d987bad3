/**
 * The engine runs one protected request: claim -> execute -> store or release. It is the only place that
 * decides; stores just answer. Adapters (the tRPC middleware, an HTTP handler) give it the request's identity
 * and fingerprint, and an `execute` callback that runs the real work and says what to store.
 *
 * Two modes:
 * - atomic (default when the store offers it): claim, work and stored response share one database
 *   transaction. Exactly-once for database effects, and no extra commit per request.
 * - lease: the claim is committed on its own with a lease and a fence, the work runs, the response is stored
 *   under that fence. For work whose effects leave the database (a payment provider): pass its key downstream.
 *
 * Completed records never change until they expire, so they are cached in process: a replay that hits the
 * cache costs no database round trip.
 */

import { Deadline, within } from "./deadline.js";
import { IdempotencyError, IdempotencyErrorCode, isIdempotencyError, isProcedureTransactionError } from "./errors.js";
import { keepLease, type LeaseKeeper } from "./lease-keeper.js";
import { abortableDelay } from "./retry.js";
import type {
  AtomicCapability,
  ClaimRequest,
  ClaimResult,
  IdempotencyStore,
  RecordId,
  StoredRecord,
  StoredResponse,
} from "./store.js";
import { DEFAULT_WAIT_MS, RecordState, replacement } from "./store.js";

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
  /** Lease mode: the request ran, but storing its result kept failing; answered RESULT_NOT_STORED. */
  RESULT_NOT_STORED: "result_not_stored",
  /** The store failed; the request was refused with STORE_UNAVAILABLE and did not run. */
  STORE_ERROR: "store_error",
} as const;
export type IdempotencyEventType = (typeof IdempotencyEventType)[keyof typeof IdempotencyEventType];

export interface IdempotencyEvent extends RecordId {
  type: IdempotencyEventType;
  /** For `conflict` and `timed_out`: when a retry can succeed, in ms from now. */
  retryAfterMs?: number;
  /** For `store_error`, `released` and `result_not_stored`: what went wrong. */
  error?: unknown;
}

/** The mode a request runs in; see the module comment. */
export const IdempotencyMode = { ATOMIC: "atomic", LEASE: "lease" } as const;
export type IdempotencyMode = (typeof IdempotencyMode)[keyof typeof IdempotencyMode];

export interface IdempotencyEngineOptions<Tx> {
  /** Where records live. */
  store: IdempotencyStore<Tx>;
  /** `atomic` when the store supports it (the default then), else `lease`. */
  mode?: IdempotencyMode;
  /** How long a completed record is replayed, in ms. Default 24 hours. */
  ttlMs?: number;
  /**
   * Lease mode: how long a claim protects a running request, in ms, before a retry may take over. Longer than
   * the slowest request you expect; a crash blocks the key this long. Default 60 seconds.
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
   * signal aborts; the key stays claimed, its lease renewed up to `maxHoldMs`, until the work settles, as work that
   * left the database (a charge on its way) cannot be undone by stopping to wait for it. `Infinity` turns it off;
   * atomic mode has `transactionTimeoutMs` instead. Default 30 s.
   */
  procedureTimeoutMs?: number;
  /**
   * Lease mode: handed the settling of a call that was answered at `procedureTimeoutMs` while its work goes on, for
   * platforms that stop a request's work once it is answered: Next.js's `after`, Vercel's `waitUntil`. Without it
   * there, a frozen instance is a crashed call (its lease runs out, and a retry takes over). A throw is logged.
   */
  waitUntil?: (settling: Promise<unknown>) => void;
  /** Completed records kept in memory for cheap replays. 0 turns the cache off. Default 10,000. */
  replayCacheSize?: number;
  /** The clock, in ms since the epoch. Injected so tests can move time; stores never read their own. */
  now?: () => number;
  /** Called once per decision, after the transaction it was taken in has ended. A throw is logged and ignored. */
  onEvent?: (event: IdempotencyEvent) => void;
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

export type RunResult<T> = { replayed: false; value: T } | { replayed: true; response: StoredResponse };

const HOUR_MS = 3_600_000;
/** Waits between attempts to store a lease-mode result after the store failed: short, the client is waiting. */
const COMPLETION_RETRY_DELAYS_MS = [100, 400];

/** Builds the engine once per protected endpoint; `run` is called per request. */
export function createIdempotencyEngine<Tx>({
  store,
  mode = store.atomic ? IdempotencyMode.ATOMIC : IdempotencyMode.LEASE,
  ttlMs = 24 * HOUR_MS,
  leaseMs = 60_000,
  maxHoldMs = 15 * 60_000,
  busyRetryAfterMs = 1_000,
  storeTimeoutMs = 5_000,
  transactionTimeoutMs = 30_000,
  procedureTimeoutMs = 30_000,
  waitUntil,
  replayCacheSize = 10_000,
  now = Date.now,
  onEvent,
}: IdempotencyEngineOptions<Tx>) {
  const atomic = store.atomic;
  if (mode === IdempotencyMode.ATOMIC && !atomic) {
    throw new TypeError("This store has no atomic mode; use mode: 'lease'.");
  }
  if (mode === IdempotencyMode.LEASE && typeof store.renew !== "function") {
    throw new TypeError("This store has no renew(): lease mode renews a running call's lease, so it needs one.");
  }
  type Atomic = AtomicCapability<Tx>;
  const cache = new ReplayCache(replayCacheSize);
  /**
   * Atomic mode: how many of the recent requests that missed the replay cache found an answer stored (a moving
   * average over about the last 16). Past one half, such requests are mostly replays (retries landing on another
   * instance, or on a restarted one): a miss then reads the record first, one statement outside any transaction,
   * and opens a transaction only when nothing is stored. Below it, a miss goes straight to its transaction, so first
   * executions pay nothing for this.
   */
  let storedShare = 0;
  function noteMiss(foundStored: boolean): void {
    storedShare += ((foundStored ? 1 : 0) - storedShare) / 16;
  }
  /**
   * Atomic mode: the calls running in this process, by record. Each settles (never rejects) when its call ends,
   * with IN_PROGRESS if the call itself gave up waiting for the key.
   */
  const running = new Map<string, Promise<typeof IN_PROGRESS | undefined>>();
  /** Runs `call` as the one call of its record in this process; duplicates wait for it. */
  function lead<T>(name: string, call: Promise<T>): Promise<T> {
    const ended = call.then(
      () => undefined,
      (error: unknown) =>
        isIdempotencyError(error) && error.code === IdempotencyErrorCode.IN_PROGRESS ? IN_PROGRESS : undefined,
    );
    running.set(name, ended);
    void ended.then(() => {
      if (running.get(name) === ended) running.delete(name);
    });
    return call;
  }
  let observerFailed = false;
  /** Reports a decision. The observer can never change the outcome it reports: a throw is logged, once. */
  const emit: Emit = (type, id, extra) => {
    if (!onEvent) return;
    try {
      onEvent({ type, scope: id.scope, path: id.path, key: id.key, ...extra });
    } catch (error) {
      if (observerFailed) return;
      observerFailed = true;
      console.error("idemkit: onEvent threw; the request's outcome stands, and later throws are not logged.", error);
    }
  };

  /** Replays or refuses a record that another request claimed. */
  function answerExisting(
    request: IdempotentRequest,
    record: StoredRecord,
    at: number,
    report: Emit = emit,
  ): RunResult<never> {
    if (record.fingerprint !== request.fingerprint) {
      report(IdempotencyEventType.MISMATCH, request);
      throw new IdempotencyError(
        IdempotencyErrorCode.FINGERPRINT_MISMATCH,
        "This Idempotency-Key was already used with a different request body; use a new key for a new request.",
      );
    }
    if (record.state === RecordState.COMPLETED) {
      cache.set(request, record);
      report(IdempotencyEventType.REPLAYED, request);
      return { replayed: true, response: record.response };
    }
    // The lease only bounds a call that crashed; a live one usually ends soon, so the client is told to come back
    // soon (its own backoff grows the wait with each attempt), never later than the lease allows a takeover.
    const retryAfterMs = Math.min(Math.max(record.leaseExpiresAt - at, 0), busyRetryAfterMs);
    return conflict(request, retryAfterMs, report);
  }

  function conflict(request: IdempotentRequest, retryAfterMs: number, report: Emit = emit): never {
    report(IdempotencyEventType.CONFLICT, request, { retryAfterMs });
    throw new IdempotencyError(
      IdempotencyErrorCode.IN_PROGRESS,
      "A request with this Idempotency-Key is still being processed; retry later.",
      { retryAfterMs },
    );
  }

  let misconfigurationLogged = false;
  /** A store that is not set up is an operator's to fix: said once in the log, and answered as it is (a 500). */
  function misconfigured(error: IdempotencyError): IdempotencyError {
    if (!misconfigurationLogged) {
      misconfigurationLogged = true;
      console.error(`idemkit: ${error.message}`);
    }
    return error;
  }

  function storeFailure(
    request: IdempotentRequest,
    error: unknown,
    message = "The idempotency store is unavailable, so the request was not run; retry later.",
  ): IdempotencyError {
    emit(IdempotencyEventType.STORE_ERROR, request, { error });
    if (isIdempotencyError(error) && error.code === IdempotencyErrorCode.STORE_MISCONFIGURED)
      return misconfigured(error);
    return new IdempotencyError(IdempotencyErrorCode.STORE_UNAVAILABLE, message, {
      cause: error,
      retryAfterMs: busyRetryAfterMs,
    });
  }

  /** A store call that may not take longer than `storeTimeoutMs`. */
  function bounded<T>(call: Promise<T>, what: string): Promise<T> {
    return within(
      call,
      storeTimeoutMs,
      () => new Error(`The store did not answer ${what} within ${storeTimeoutMs} ms.`),
    );
  }

  function claimRequest(request: IdempotentRequest): ClaimRequest {
    const at = now();
    return {
      id: { scope: request.scope, path: request.path, key: request.key },
      fingerprint: request.fingerprint,
      now: at,
      leaseExpiresAt: at + leaseMs,
      expiresAt: at + ttlMs,
    };
  }

  async function runLease<T>(
    request: IdempotentRequest,
    execute: (execution: Execution<Tx>) => Promise<Settlement<T>>,
  ): Promise<RunResult<T>> {
    const claim = claimRequest(request);
    const claiming = store.claim(claim);
    let claimed: ClaimResult;
    try {
      claimed = await bounded(claiming, "the claim");
    } catch (error) {
      // A claim that lands after its request was answered would keep the key from the retry until its lease ends.
      void claiming.then((late) => late.status === "claimed" && store.release(claim.id, late.fence)).catch(() => {});
      throw storeFailure(request, error);
    }
    if (claimed.status === "exists") return answerExisting(request, claimed.record, claim.now);
    const { fence } = claimed;
    if (claimed.takeover) emit(IdempotencyEventType.TAKEOVER, request);

    const { leaseExpiresAt } = claim;
    const lease = keepLease({ store, id: claim.id, fence, leaseMs, leaseExpiresAt, maxHoldMs, storeTimeoutMs, now });
    const aborter = new AbortController();
    const abort = () => aborter.abort(lease.signal.reason);
    if (lease.signal.aborted) abort();
    else lease.signal.addEventListener("abort", abort, { once: true });
    const work = execute({ tx: undefined, signal: aborter.signal }).then(
      (settlement) => ({ settlement }),
      (error: unknown) => ({ error }),
    );
    const limit = new Deadline();
    limit.arm(procedureTimeoutMs, () => new ProcedureTimedOut());
    let outcome: Awaited<typeof work>;
    try {
      outcome = await limit.race(work);
    } catch {
      // The call is answered, but its work may still reach the outside world (a charge on its way): the key stays
      // claimed, its lease renewed, until the work settles and its outcome is stored or released as usual, so a
      // retry is told IN_PROGRESS meanwhile and never runs it while it may still run. A work that stops on the
      // signal and fails is released like any failure: the next retry runs it again, with the same sub-keys.
      aborter.abort(
        new DOMException(`${request.path} ran past procedureTimeoutMs (${procedureTimeoutMs} ms).`, "TimeoutError"),
      );
      const settling = work.then((late) => settleLease(request, fence, lease, late)).catch(() => {});
      try {
        waitUntil?.(settling);
      } catch (error) {
        console.error("idemkit: waitUntil threw; the call's work still settles in the background.", error);
      }
      const retryAfterMs = busyRetryAfterMs;
      emit(IdempotencyEventType.TIMED_OUT, request, { retryAfterMs });
      throw new IdempotencyError(
        IdempotencyErrorCode.IN_PROGRESS,
        `The request ran longer than ${procedureTimeoutMs} ms and may still be under way; retry with the same ` +
          "Idempotency-Key for its answer.",
        { retryAfterMs },
      );
    } finally {
      limit.clear();
    }
    return settleLease(request, fence, lease, outcome);
  }

  /** Stores or releases what a lease-mode call's work came to, once it settled. */
  async function settleLease<T>(
    request: IdempotentRequest,
    fence: number,
    lease: LeaseKeeper,
    outcome: { settlement: Settlement<T> } | { error: unknown },
  ): Promise<RunResult<T>> {
    // The work settled: no renewal may run (and abort its signal) while its outcome is released or stored.
    lease.stop();
    if ("error" in outcome) {
      await releaseQuietly(request, fence, outcome.error);
      throw outcome.error;
    }
    const { settlement } = outcome;
    const { response } = settlement;
    if (response === undefined) {
      await releaseQuietly(request, fence, undefined);
      return { replayed: false, value: settlement.value };
    }
    const expiresAt = now() + ttlMs;
    let stored: boolean;
    try {
      stored = await completeWithRetries(request, fence, response, expiresAt);
    } catch (error) {
      // The work ran: answering "not run, retry" (STORE_UNAVAILABLE) would be a lie. The key stays held until its
      // lease ends, and only then can a retry run it again.
      emit(IdempotencyEventType.RESULT_NOT_STORED, request, { error });
      throw new IdempotencyError(
        IdempotencyErrorCode.RESULT_NOT_STORED,
        "The request ran, but its result could not be stored; a retry runs it again once its lease ends.",
        { cause: error, retryAfterMs: Math.max(lease.leaseEndsAt - now(), 0) },
      );
    }
    if (!stored) {
      emit(IdempotencyEventType.LEASE_LOST, request);
      throw new IdempotencyError(
        IdempotencyErrorCode.LEASE_LOST,
        "This request ran past its lease and another took over; its result was discarded. Retry to get the stored one.",
        { retryAfterMs: 0 },
      );
    }
    remember(request, fence, response, expiresAt);
    emit(IdempotencyEventType.EXECUTED, request);
    return { replayed: false, value: settlement.value };
  }

  /**
   * Stores a lease-mode result, trying again shortly when the store fails: the work already ran. An attempt that
   * failed may still have landed (its answer lost), so a later "not yours" is checked against the record.
   */
  async function completeWithRetries(
    id: RecordId,
    fence: number,
    response: StoredResponse,
    expiresAt: number,
    delaysMs: readonly number[] = COMPLETION_RETRY_DELAYS_MS,
    failedBefore = false,
  ): Promise<boolean> {
    try {
      if (await bounded(store.complete(id, fence, response, expiresAt), "the completion")) return true;
      if (!failedBefore) return false;
      const record = await bounded(store.get(id), "a read");
      return record?.state === RecordState.COMPLETED && record.fence === fence;
    } catch (error) {
      const [delayMs, ...later] = delaysMs;
      if (delayMs === undefined) throw error;
      await abortableDelay(delayMs);
      return completeWithRetries(id, fence, response, expiresAt, later, true);
    }
  }

  function remember(request: IdempotentRequest, fence: number, response: StoredResponse, expiresAt: number): void {
    const { fingerprint } = request;
    cache.set(request, { state: RecordState.COMPLETED, fingerprint, fence, response, expiresAt });
  }

  /** A failed release leaves the record until its lease ends; the request already failed, so don't mask that. */
  async function releaseQuietly(request: IdempotentRequest, fence: number, error: unknown): Promise<void> {
    try {
      await bounded(store.release(request, fence), "the release");
    } catch (releaseError) {
      emit(IdempotencyEventType.STORE_ERROR, request, { error: releaseError });
    }
    emit(IdempotencyEventType.RELEASED, request, { error });
  }

  /**
   * Atomic mode: claims in a transaction and runs. While a transaction elsewhere holds the key, a store with `peek`
   * answers at once; the duplicate then waits outside any transaction, asking between pauses, until that call
   * ended (replay, or claim again if it was rolled back) or `patience` ran out (409). Once most of this
   * procedure's cache misses were replays, a miss reads the record first (one statement, no transaction).
   * `heldElsewhere`: a leader in this process just found the key held, so start by waiting.
   */
  async function runAtomic<T>(
    request: IdempotentRequest,
    execute: (execution: Execution<Tx>) => Promise<Settlement<T>>,
    atomic: Atomic,
    patience: Patience,
    heldElsewhere = false,
  ): Promise<RunResult<T>> {
    const read = atomic.peek?.bind(atomic);
    let next: "claim" | "read" | "wait" = heldElsewhere ? "wait" : read && storedShare > 0.5 ? "read" : "claim";
    for (let pauseMs = FIRST_POLL_MS; ; ) {
      if (next === "claim") {
        const outcome = await attemptAtomic(request, execute, atomic, patience);
        if (outcome !== HELD_ELSEWHERE) return outcome;
        next = "wait";
        continue;
      }
      if (!read) return conflict(request, busyRetryAfterMs);
      if (next === "wait") {
        await patience.deadline.sleep(pauseMs).catch(() => conflict(request, busyRetryAfterMs));
        pauseMs = Math.min(pauseMs * 2, MAX_POLL_MS);
      }
      // A read that outlasts the wait: with the key known to be held, 409; before that, no connection came.
      const outOfTime =
        next === "wait"
          ? () => conflict(request, busyRetryAfterMs)
          : () => {
              throw storeFailure(request, new Error("no connection"), noConnectionMessage(patience.waitMs));
            };
      const seen = await peek(request, read, patience, outOfTime);
      if (seen === RUNNING) next = "wait";
      else if (seen) return seen;
      else next = "claim";
    }
  }

  /**
   * One read of the key outside any transaction, within what is left of `patience`: the answer to give when a
   * record is stored, RUNNING while a transaction holds the key, undefined when it is free to claim.
   */
  async function peek(
    request: IdempotentRequest,
    read: NonNullable<Atomic["peek"]>,
    patience: Patience,
    outOfTime: () => never,
  ): Promise<RunResult<never> | typeof RUNNING | undefined> {
    let seen: Awaited<ReturnType<typeof read>>;
    const limit = new Deadline();
    limit.arm(storeTimeoutMs, () => new Error(`The store did not answer a read within ${storeTimeoutMs} ms.`));
    try {
      seen = await patience.deadline.race(limit.race(read(request)));
    } catch (error) {
      if (error === patience.missed) outOfTime();
      throw storeFailure(request, error);
    } finally {
      limit.clear();
    }
    const at = now();
    if (seen.record && !replacement(seen.record, { now: at, fingerprint: request.fingerprint })) {
      noteMiss(true);
      return answerExisting(request, seen.record, at);
    }
    return seen.running ? RUNNING : undefined;
  }

  /** One transaction: claim, run, store. HELD_ELSEWHERE when a store with `peek` found the key held. */
  async function attemptAtomic<T>(
    request: IdempotentRequest,
    execute: (execution: Execution<Tx>) => Promise<Settlement<T>>,
    atomic: Atomic,
    { startedAt, waitMs }: Patience,
  ): Promise<RunResult<T> | typeof HELD_ELSEWHERE> {
    const claim = claimRequest(request);
    const waitLeft = () => Math.max(1, waitMs - (now() - startedAt));
    let committed: { fence: number; response: StoredResponse; expiresAt: number } | undefined;
    // Decisions taken inside the transaction are reported once it has ended, so no observer holds it open.
    const decided: Array<Parameters<Emit>> = [];
    const report: Emit = (...event) => void decided.push(event);
    const unavailable = (message: string) => () => storeFailure(request, new Error(message), message);
    // What a store failure means depends on how far the request got: nothing ran, nothing was kept, or unknown.
    let failure: string | undefined;
    const deadline = new Deadline();
    // A duplicate's wait (waitMs) covers queueing for a connection as well as waiting on the key's row.
    deadline.arm(waitLeft(), unavailable(noConnectionMessage(waitMs)));
    try {
      const result = await deadline.race(
        atomic.transaction(async (session): Promise<RunResult<T>> => {
          // The connection came after the client was answered: roll back without claiming.
          deadline.check();
          const waitLeftMs = waitLeft();
          deadline.arm(
            waitLeftMs + storeTimeoutMs,
            unavailable(
              `The idempotency store did not answer the claim in time, so the request was not run; retry later.`,
            ),
          );
          const claimed = await deadline.race(session.claim({ ...claim, waitMs: waitLeftMs }));
          if (claimed.status === "busy") {
            if (atomic.peek) throw new HeldElsewhere();
            return conflict(request, busyRetryAfterMs, report);
          }
          noteMiss(claimed.status === "exists");
          if (claimed.status === "exists") return answerExisting(request, claimed.record, claim.now, report);
          failure =
            "The database failed during the request's transaction, so none of its writes were kept; retry later.";
          deadline.arm(
            startedAt + transactionTimeoutMs - now(),
            unavailable(
              `The request's transaction was open for more than ${transactionTimeoutMs} ms and was rolled back, ` +
                "so none of its writes were kept; retry later.",
            ),
          );
          // The transaction holds the key until it ends: nothing can take it over, so this signal never aborts.
          const procedure = execute({ tx: session.tx, signal: new AbortController().signal });
          const settlement = await deadline.race(
            procedure.catch((error: unknown) => {
              throw new WorkFailed(error);
            }),
          );
          const { response } = settlement;
          if (response === undefined) throw new Rollback(settlement.value);
          deadline.arm(
            storeTimeoutMs,
            unavailable(
              `The database did not confirm the commit within ${storeTimeoutMs} ms, so this request's outcome is ` +
                "unknown; retry with the same key to get it.",
            ),
          );
          failure =
            "The database failed before confirming the commit, so this request's outcome is unknown; retry with " +
            "the same key to get it.";
          const expiresAt = now() + ttlMs;
          await session.complete(claim.id, response, expiresAt, { undoEffects: response.status >= 400 });
          committed = { fence: claimed.fence, response, expiresAt };
          return { replayed: false, value: settlement.value };
        }),
      );
      // Only now is the response durable, so only now may it be replayed from memory.
      if (committed) {
        remember(request, committed.fence, committed.response, committed.expiresAt);
        emit(IdempotencyEventType.EXECUTED, request);
      }
      return result;
    } catch (error) {
      if (error instanceof HeldElsewhere) return HELD_ELSEWHERE;
      if (error instanceof Rollback) {
        emit(IdempotencyEventType.RELEASED, request);
        return { replayed: false, value: error.value as T };
      }
      if (error instanceof WorkFailed) {
        emit(IdempotencyEventType.RELEASED, request, { error: error.error });
        throw error.error;
      }
      if (isProcedureTransactionError(error)) {
        emit(IdempotencyEventType.RELEASED, request, { error });
        throw error;
      }
      if (isIdempotencyError(error) && error.code !== IdempotencyErrorCode.STORE_MISCONFIGURED) throw error;
      throw storeFailure(request, error, failure);
    } finally {
      deadline.clear();
      for (const event of decided) emit(...event);
    }
  }

  return {
    /** The mode requests run in. */
    mode,
    /**
     * Runs `execute` at most once for this request's (scope, path, key), or replays what the first run stored.
     * Throws an {@link IdempotencyError} for a conflict, a mismatch, a lost lease or an unavailable store.
     */
    async run<T>(
      request: IdempotentRequest,
      execute: (execution: Execution<Tx>) => Promise<Settlement<T>>,
    ): Promise<RunResult<T>> {
      const cached = cache.get(request, now());
      if (cached) return answerExisting(request, cached, 0);
      if (!atomic || mode !== IdempotencyMode.ATOMIC) return runLease(request, execute);
      const patience = new Patience(now(), atomic.waitMs ?? DEFAULT_WAIT_MS);
      let heldElsewhere = false;
      try {
        for (;;) {
          // A duplicate of a call running in this process waits for it in memory, then replays what it stored
          // (or claims, if it stored nothing): no connection, no statement.
          const name = cacheKey(request);
          const leader = running.get(name);
          if (!leader) return await lead(name, runAtomic(request, execute, atomic, patience, heldElsewhere));
          const outcome = await patience.deadline.race(leader).catch(() => conflict(request, busyRetryAfterMs));
          const stored = cache.get(request, now());
          if (stored) return answerExisting(request, stored, 0);
          // The leader gave up on a call that holds the key elsewhere: this one waits on with what it has left.
          heldElsewhere = outcome === IN_PROGRESS;
        }
      } finally {
        patience.end();
      }
    },
  };
}

export type IdempotencyEngine<Tx> = ReturnType<typeof createIdempotencyEngine<Tx>>;

type Emit = (type: IdempotencyEventType, id: RecordId, extra?: Partial<IdempotencyEvent>) => void;

/**
 * How long one request may wait, in all, for a call that holds its key (a duplicate's `waitMs`). Its timer is set
 * only when the request first waits, or reads the key outside a transaction: most first executions never do.
 */
class Patience {
  #deadline: Deadline | undefined;
  #ended = false;
  /** When the request started waiting, on the monotonic clock its deadline runs on. */
  readonly #startedOn = performance.now();
  constructor(
    readonly startedAt: number,
    readonly waitMs: number,
  ) {}

  /** Runs out when the wait is over: every wait of the request races it. */
  get deadline(): Deadline {
    if (!this.#deadline) {
      this.#deadline = new Deadline();
      if (this.#ended) this.#deadline.clear();
      const waitedMs = performance.now() - this.#startedOn;
      this.#deadline.arm(this.waitMs - waitedMs, () => new Error("waited for the call holding the key"));
    }
    return this.#deadline;
  }

  /** The error the wait ran out with, if it did. */
  get missed(): Error | undefined {
    return this.#deadline?.missed;
  }

  /** The request has been answered. */
  end(): void {
    this.#ended = true;
    this.#deadline?.clear();
  }
}

/** What a request is told when it was not handed a database connection within its wait. */
function noConnectionMessage(waitMs: number): string {
  return `No database connection was free within ${waitMs} ms, so the request was not run; retry later.`;
}

/** Pauses between polls of a key held elsewhere: short at first (most calls end soon), then steady. */
const FIRST_POLL_MS = 10;
const MAX_POLL_MS = 100;

const HELD_ELSEWHERE = Symbol("held elsewhere");
const IN_PROGRESS = Symbol("in progress");
const RUNNING = Symbol("running");

/** Lease mode: the procedure's time ran out before it settled. */
class ProcedureTimedOut extends Error {}

/** Thrown inside an atomic transaction whose key another transaction holds: roll back, then wait outside. */
class HeldElsewhere {}

/** Thrown inside an atomic transaction to roll it back while still answering the client. */
class Rollback {
  constructor(readonly value: unknown) {}
}

/** Marks an error as the work's own, so it is not mistaken for a store failure. */
class WorkFailed {
  constructor(readonly error: unknown) {}
}

/** Completed records by id, least recently used first out. */
class ReplayCache {
  readonly #entries = new Map<string, StoredRecord>();
  constructor(readonly maxEntries: number) {}

  get(id: RecordId, at: number): StoredRecord | undefined {
    const name = cacheKey(id);
    const record = this.#entries.get(name);
    if (!record) return undefined;
    this.#entries.delete(name);
    if (record.expiresAt <= at) return undefined;
    this.#entries.set(name, record);
    return record;
  }

  set(id: RecordId, record: StoredRecord): void {
    if (this.maxEntries <= 0) return;
    const name = cacheKey(id);
    this.#entries.delete(name);
    this.#entries.set(name, record);
    if (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }
}

function cacheKey({ scope, path, key }: RecordId): string {
  return `${scope}\u0000${path}\u0000${key}`;
}
