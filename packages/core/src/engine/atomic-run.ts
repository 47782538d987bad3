/**
 * Atomic mode: the claim, the work's writes and the stored answer share one database transaction, so they commit
 * together or not at all. A duplicate finds the key held (at once with the store's `peek`) and waits outside any
 * transaction, polling, until the call ends: then it replays, or claims if the call was rolled back.
 */
import { Deadline } from "../deadline.js";
import { IdempotencyErrorCode, isIdempotencyError, isProcedureTransactionError } from "../errors.js";
import { isLimited } from "../numeric-options.js";
import type { AtomicCapability, StoredResponse } from "../store.js";
import { replacement } from "../store.js";
import type { Answers, EngineSettings } from "./answers.js";
import { CallPhase, type PhaseFailure } from "./phases.js";
import {
  type Emit,
  type Execution,
  IdempotencyEventType,
  type IdempotentRequest,
  type RunResult,
  type Settlement,
} from "./types.js";
import { answering, UnstorableAnswer } from "./unstorable.js";
import { FIRST_POLL_MS, MAX_POLL_MS, type Patience } from "./waiting.js";

const HELD_ELSEWHERE = Symbol("held elsewhere");
const RUNNING = Symbol("running");

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

/** The atomic-mode run of one engine, over the store's atomic capability. */
export function atomicRun<Tx>(settings: EngineSettings<Tx>, answers: Answers, atomic: AtomicCapability<Tx>) {
  const { now, ttlMs, storeTimeoutMs, transactionTimeoutMs, busyRetryAfterMs } = settings;
  const { emit, refusals, answerExisting, conflict, storeFailure, claimRequest, remember, rolledBack } = answers;
  type Atomic = AtomicCapability<Tx>;
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
        await patience.waitFor((deadline) => deadline.sleep(pauseMs)).catch(() => conflict(request, busyRetryAfterMs));
        pauseMs = Math.min(pauseMs * 2, MAX_POLL_MS);
      }
      // A read that outlasts the wait: with the key known to be held, 409; before that, no connection came.
      const outOfTime =
        next === "wait"
          ? () => conflict(request, busyRetryAfterMs)
          : () => {
              throw storeFailure(request, new Error("no connection"), (options) =>
                refusals.atomic([CallPhase.CONNECTING, "timedOut"], options),
              );
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
      throw storeFailure(request, error, (options) => refusals.atomic([CallPhase.CLAIMING, "failed"], options));
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

  /**
   * One transaction: claim, run, store. HELD_ELSEWHERE when a store with `peek` found the key held. The call moves
   * through its phases (`phases.ts`) in order; each is bounded, and a failure in it is answered as the phases' table
   * says for that phase.
   */
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
    let phase: Exclude<CallPhase, typeof CallPhase.ANSWERING | typeof CallPhase.RECORDING> = CallPhase.CONNECTING;
    const failedWith = (failure: PhaseFailure & ("failed" | "timedOut"), cause: unknown) =>
      storeFailure(request, cause, (options) => refusals.atomic([phase, failure], options));
    const deadline = new Deadline();
    /** Moves the call on to `next`, which may last `ms`. */
    const enter = (next: typeof phase, ms: number) => {
      phase = next;
      // What ran out is said in the cause too (what onEvent and the channels see), as the client is told it.
      deadline.arm(ms, () => failedWith("timedOut", new Error(refusals.atomic([phase, "timedOut"]).message)));
    };
    // A duplicate's wait (waitMs) covers queueing for a connection as well as waiting on the key's row.
    enter(CallPhase.CONNECTING, waitLeft());
    try {
      const result = await deadline.race(
        atomic.transaction(async (session): Promise<RunResult<T>> => {
          // The connection came after the client was answered: roll back without claiming.
          deadline.check();
          const waitLeftMs = waitLeft();
          enter(CallPhase.CLAIMING, waitLeftMs + storeTimeoutMs);
          const holdMs = isLimited(transactionTimeoutMs) ? startedAt + transactionTimeoutMs - now() : undefined;
          const claimed = await deadline.race(session.claim({ ...claim, waitMs: waitLeftMs, holdMs }));
          if (claimed.status === "busy") {
            if (atomic.peek) throw new HeldElsewhere();
            return conflict(request, busyRetryAfterMs, report);
          }
          noteMiss(claimed.status === "exists");
          if (claimed.status === "exists") return answerExisting(request, claimed.record, claim.now, report);
          enter(CallPhase.WORKING, startedAt + transactionTimeoutMs - now());
          // The transaction holds the key until it ends: nothing can take it over, so this signal never aborts. It
          // is made when the call first reads it (few do), one per call, so that listeners never pile up on one.
          let signal: AbortSignal | undefined;
          const procedure = execute({
            tx: session.tx,
            get signal() {
              signal ??= new AbortController().signal;
              return signal;
            },
            answer: answering,
          });
          const settlement = await deadline.race(
            procedure.catch((error: unknown) => {
              // An answer that could not be made after the work ran rolls the work back with the claim: ROLLED_BACK.
              throw new WorkFailed(error instanceof UnstorableAnswer ? rolledBack(request, error.error) : error);
            }),
          );
          const { response } = settlement;
          if (response === undefined) throw new Rollback(settlement.value);
          enter(CallPhase.COMMITTING, storeTimeoutMs);
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
      throw failedWith("failed", error);
    } finally {
      deadline.clear();
      for (const event of decided) emit(...event);
    }
  }

  return <T>(
    request: IdempotentRequest,
    execute: (execution: Execution<Tx>) => Promise<Settlement<T>>,
    patience: Patience,
    heldElsewhere: boolean,
  ) => runAtomic(request, execute, atomic, patience, heldElsewhere);
}
