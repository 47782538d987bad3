/**
 * Lease mode: the claim is committed on its own, with a lease that the running call renews and a fence that a
 * call taken over can never store under; the work runs outside any transaction; its answer is stored under the
 * fence, or the key released. A call past `procedureTimeoutMs` is answered IN_PROGRESS while its work settles.
 */
import { Deadline } from "../deadline.js";
import { IdempotencyError, IdempotencyErrorCode } from "../errors.js";
import { abortableDelay } from "../retry.js";
import type { ClaimResult, RecordId, StoredResponse } from "../store.js";
import { RecordState } from "../store.js";
import type { Answers, EngineSettings } from "./answers.js";
import { keepLease, type LeaseKeeper } from "./lease-keeper.js";
import { answeredBeforeSettled } from "./settling.js";
import {
  type Execution,
  IdempotencyEventType,
  type IdempotentRequest,
  type RunResult,
  type Settlement,
} from "./types.js";
import { answering, ranType } from "./unstorable.js";

/** Waits between attempts to store a lease-mode result after the store failed: short, the client is waiting. */
const COMPLETION_RETRY_DELAYS_MS = [100, 400];

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
  const { emit, answerExisting, storeFailure, bounded, claimRequest, remember } = answers;

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
      const settling = work.then((late) => settleLease(request, fence, lease, late)).catch(() => {});
      try {
        waitUntil?.(settling);
      } catch (error) {
        console.error("idemkit: waitUntil threw; the call's work still settles in the background.", error);
      }
      const retryAfterMs = busyRetryAfterMs;
      emit(IdempotencyEventType.TIMED_OUT, request, { retryAfterMs });
      const answer = new IdempotencyError(
        IdempotencyErrorCode.IN_PROGRESS,
        `The request ran longer than ${procedureTimeoutMs} ms and may still be under way; retry with the same ` +
          "Idempotency-Key for its answer.",
        { retryAfterMs },
      );
      // It counts as running until it settles, or until its lease ends (its hold past maxHoldMs, or taken over):
      // a hung call is let go then, like a crashed one, and a retry may take the key over.
      answeredBeforeSettled(answer, Promise.race([settling, aborted(lease.signal)]));
      throw answer;
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
    const result: RunResult<T> = { replayed: false, value: settlement.value };
    emit(ranType(result), request);
    return result;
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

  /** A failed release leaves the record until its lease ends; the request already failed, so don't mask that. */
  async function releaseQuietly(request: IdempotentRequest, fence: number, error: unknown): Promise<void> {
    try {
      await bounded(store.release(request, fence), "the release");
    } catch (releaseError) {
      emit(IdempotencyEventType.STORE_ERROR, request, { error: releaseError });
    }
    emit(IdempotencyEventType.RELEASED, request, { error });
  }

  return runLease;
}
