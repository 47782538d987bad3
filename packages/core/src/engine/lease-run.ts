/**
 * Lease mode: the claim is committed on its own, with a lease that the running call renews and a fence that a
 * call taken over can never store under; the work runs outside any transaction; its answer is stored under the
 * fence, or the key released. A call past `procedureTimeoutMs` is answered IN_PROGRESS while its work settles.
 */
import { abortableDelay, Deadline } from "../deadline.js";
import type { ClaimResult, StoredResponse } from "../store.js";
import { RecordState } from "../store.js";
import type { Answers, EngineSettings } from "./answers.js";
import { keepLease, type LeaseKeeper } from "./lease-keeper.js";
import { CallPhase, keptRefusal } from "./phases.js";
import { answeredBeforeSettled, settlingOf } from "./settling.js";
import {
  type Execution,
  IdempotencyEventType,
  type IdempotentRequest,
  type RunResult,
  type Settlement,
} from "./types.js";
import { answering, keptInstead, UnstorableAnswer } from "./unstorable.js";

/** Waits between attempts to store a lease-mode result after the store failed: short, the client is waiting. */
const COMPLETION_RETRY_DELAYS_MS = [100, 400];
/** The first wait before storing it again once its client was answered; doubled each time, up to a third of a lease. */
const COMPLETION_BACKGROUND_FIRST_DELAY_MS = 1_000;

/** Resolves once `signal` has aborted. */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** Lease mode: the procedure's time ran out before it settled. */
class ProcedureTimedOut extends Error {}

/** The lease-mode run of one engine. */
export function leaseRun<Tx>(settings: EngineSettings<Tx>, answers: Answers) {
  const { store, now, ttlMs, leaseMs, maxHoldMs, storeTimeoutMs, procedureTimeoutMs, waitUntil, busyRetryAfterMs } =
    settings;
  const { emit, log, refusals, answerExisting, storeFailure, bounded, claimRequest, remember } = answers;

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
      throw storeFailure(request, error, (options) => refusals.lease([CallPhase.CLAIMING, "failed"], options));
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
    const work = execute({ tx: undefined, signal: aborter.signal, answer: answering }).then(
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
      // Its settling ends when the work's answer is stored, in the background too (RAN_UNRECORDED's).
      const settling = work
        .then((late) => settleLease(request, fence, lease, late))
        .catch((error: unknown) => settlingOf(error));
      try {
        waitUntil?.(settling);
      } catch (error) {
        console.error("idemkit: waitUntil threw; the call's work still settles in the background.", error);
      }
      const retryAfterMs = busyRetryAfterMs;
      emit(IdempotencyEventType.TIMED_OUT, request, { retryAfterMs });
      const answer = refusals.lease([CallPhase.WORKING, "timedOut"], { retryAfterMs });
      // It counts as running until it settles, or until its lease ends (its hold past maxHoldMs, or taken over):
      // a hung call is let go then, like a crashed one, and a retry may take the key over.
      answeredBeforeSettled(answer, Promise.race([settling, aborted(lease.signal)]));
      throw answer;
    } finally {
      limit.clear();
    }
    return settleLease(request, fence, lease, outcome);
  }

  /**
   * Stores or releases what a lease-mode call's work came to, once it settled. Its work ran: a failure to answer
   * (`UnstorableAnswer`) keeps a refusal for the key in the answer's place, and this call is answered it too.
   */
  async function settleLease<T>(
    request: IdempotentRequest,
    fence: number,
    lease: LeaseKeeper,
    outcome: { settlement: Settlement<T> } | { error: unknown },
  ): Promise<RunResult<T>> {
    if ("error" in outcome) {
      const { error } = outcome;
      if (!(error instanceof UnstorableAnswer)) {
        await release(request, fence, lease, error);
        throw error;
      }
      const response = keptInstead(request, error.error, log);
      await record(request, fence, lease, response, IdempotencyEventType.RAN_WITHOUT_ANSWER);
      throw keptRefusal();
    }
    const { value, response } = outcome.settlement;
    if (response === undefined) await release(request, fence, lease, undefined);
    else await record(request, fence, lease, response, IdempotencyEventType.EXECUTED);
    return { replayed: false, value };
  }

  /**
   * Stores the answer of a call whose work ran. The lease is kept, and renewed, until it is stored, so that no
   * retry can run the work again meanwhile (one is told IN_PROGRESS, and replays once the answer is in). `ran` is
   * what is reported once it is stored.
   */
  async function record(
    request: IdempotentRequest,
    fence: number,
    lease: LeaseKeeper,
    response: StoredResponse,
    ran: IdempotencyEventType,
  ): Promise<void> {
    const expiresAt = now() + ttlMs;
    const completion = { request, fence, response, expiresAt, ran };
    let stored: boolean;
    try {
      stored = await completeSoon(completion);
    } catch (error) {
      const finishing = completeWhileHeld(completion, lease);
      try {
        waitUntil?.(finishing);
      } catch (thrown) {
        console.error("idemkit: waitUntil threw; the call's answer is still being stored in the background.", thrown);
      }
      emit(IdempotencyEventType.RAN_UNRECORDED, request, { error });
      const answer = refusals.lease([CallPhase.RECORDING, "failed"], { cause: error });
      answeredBeforeSettled(answer, finishing);
      throw answer;
    }
    lease.stop();
    if (!stored) {
      emit(IdempotencyEventType.LEASE_LOST, request);
      throw refusals.lease([CallPhase.RECORDING, "lost"], { retryAfterMs: 0 });
    }
    remember(request, fence, response, expiresAt);
    emit(ran, request);
  }

  /** A completed lease-mode call's answer, with where it goes: stored under the call's fence. */
  interface Completion {
    request: IdempotentRequest;
    fence: number;
    response: StoredResponse;
    expiresAt: number;
    /** What is reported once it is stored: executed, or its answer kept refused in its place. */
    ran: IdempotencyEventType;
  }

  /**
   * One attempt to store `completion`'s answer: whether it is stored under the call's fence. After an attempt that
   * failed (which may still have landed, its answer lost), a later "not yours" is checked against the record.
   */
  async function complete({ request, fence, response, expiresAt }: Completion, failedBefore: boolean) {
    if (await bounded(store.complete(request, fence, response, expiresAt), "the completion")) return true;
    if (!failedBefore) return false;
    const record = await bounded(store.get(request), "a read");
    return record?.state === RecordState.COMPLETED && record.fence === fence;
  }

  /** Stores the answer while the client waits, trying again shortly when the store fails; throws the last failure. */
  async function completeSoon(completion: Completion): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await complete(completion, attempt > 0);
      } catch (error) {
        const delayMs = COMPLETION_RETRY_DELAYS_MS[attempt];
        if (delayMs === undefined) throw error;
        await abortableDelay(delayMs);
      }
    }
  }

  /**
   * Goes on storing the answer after its client was answered RAN_UNRECORDED, for as long as the call holds its lease
   * (renewed up to `maxHoldMs`): a retry meanwhile is told IN_PROGRESS and a lookup says running, and once the
   * answer is in, both get it. It stops when the lease is lost or ends; then nothing is recorded, and a retry with
   * the key may run the call again. Never rejects.
   */
  async function completeWhileHeld(completion: Completion, lease: LeaseKeeper): Promise<void> {
    const { request, fence, response, expiresAt, ran } = completion;
    let delayMs = COMPLETION_BACKGROUND_FIRST_DELAY_MS;
    try {
      for (;;) {
        await abortableDelay(delayMs, lease.signal);
        try {
          const stored = await complete(completion, true);
          if (!stored) {
            emit(IdempotencyEventType.LEASE_LOST, request);
            return;
          }
          remember(request, fence, response, expiresAt);
          emit(ran, request);
          return;
        } catch (error) {
          emit(IdempotencyEventType.STORE_ERROR, request, { error });
          delayMs = Math.min(delayMs * 2, leaseMs / 3);
        }
      }
    } catch {
      // The lease was lost or ran out with the answer still unrecorded: nothing more can be stored under this
      // fence, and a retry with the key may run the call again. Said, for the operator to see.
      emit(IdempotencyEventType.LEASE_LOST, request, { error: lease.signal.reason });
    } finally {
      lease.stop();
    }
  }

  /**
   * Releases the key of a call whose work settled and keeps nothing: renewals stop first, so none runs (and aborts
   * its signal) meanwhile. A failed release leaves the record until its lease ends; the request already failed, so
   * that is not allowed to mask it.
   */
  async function release(request: IdempotentRequest, fence: number, lease: LeaseKeeper, error: unknown) {
    lease.stop();
    try {
      await bounded(store.release(request, fence), "the release");
    } catch (releaseError) {
      emit(IdempotencyEventType.STORE_ERROR, request, { error: releaseError });
    }
    emit(IdempotencyEventType.RELEASED, request, { error });
  }

  return runLease;
}
