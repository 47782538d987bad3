/**
 * What every run answers with, whatever its mode: a decision reported to the observer (which can never change it),
 * a stored record replayed or refused, a conflict, a store failure said as such, a store call bounded in time.
 */
import { within } from "../deadline.js";
import { isSealedBody, sealedWithoutKeys } from "../encrypted-store.js";
import {
  type IdempotencyError,
  IdempotencyErrorCode,
  type IdempotencyErrorOptions,
  isIdempotencyError,
} from "../errors.js";
import type { OnceLog } from "../operator-detail.js";
import type { ClaimRequest, IdempotencyStore, StoredRecord, StoredResponse } from "../store.js";
import { RecordState } from "../store.js";
import { CallPhase, refusalsOf } from "./phases.js";
import type { ReplayCache } from "./replay-cache.js";
import { keptRefusalOf } from "./stored-refusal.js";
import {
  type Emit,
  type IdempotencyEvent,
  IdempotencyEventType,
  type IdempotentRequest,
  type RunResult,
} from "./types.js";
import { logRolledBack } from "./unstorable.js";

/** The engine's settings, with their defaults applied, and its replay cache: what its parts share. */
export interface EngineSettings<Tx> {
  store: IdempotencyStore<Tx>;
  ttlMs: number;
  leaseMs: number;
  maxHoldMs: number;
  busyRetryAfterMs: number;
  storeTimeoutMs: number;
  transactionTimeoutMs: number;
  procedureTimeoutMs: number;
  /** Atomic mode: how long a duplicate waits, in all, for the call holding its key (the store's `waitMs`). */
  waitMs: number;
  waitUntil: ((settling: Promise<unknown>) => void) | undefined;
  now: () => number;
  /** What is wrong with the endpoint, for its operator: each detail said once. */
  log: OnceLog;
  cache: ReplayCache;
}

/**
 * An observer that can never change what it observes: a throw is logged, once, and the outcome stands. `publish`
 * (the telemetry's channel, which swallows its own throws) gets every decision too.
 */
export function reportingTo(
  onEvent: ((event: IdempotencyEvent) => void) | undefined,
  publish: (event: IdempotencyEvent) => void = () => {},
): Emit {
  let observerFailed = false;
  return (type, id, extra) => {
    const event: IdempotencyEvent = { type, scope: id.scope, path: id.path, key: id.key, ...extra };
    publish(event);
    if (!onEvent) return;
    try {
      onEvent(event);
    } catch (error) {
      if (observerFailed) return;
      observerFailed = true;
      console.error("idemkit: onEvent threw; the request's outcome stands, and later throws are not logged.", error);
    }
  };
}

/** The answers of one engine: built once, shared by its lease and atomic runs. */
export type Answers = ReturnType<typeof answersOf>;

export function answersOf<Tx>(settings: EngineSettings<Tx>, emit: Emit) {
  const { busyRetryAfterMs, storeTimeoutMs, leaseMs, ttlMs, now, log, cache } = settings;
  const refusals = refusalsOf(settings);

  /** Replays or refuses a record that another request claimed. */
  function answerExisting(
    request: IdempotentRequest,
    record: StoredRecord,
    at: number,
    report: Emit = emit,
  ): RunResult<never> {
    if (record.fingerprint !== request.fingerprint) {
      report(IdempotencyEventType.MISMATCH, request);
      throw refusals.taken("mismatched");
    }
    if (record.state === RecordState.COMPLETED) {
      if (isSealedBody(record.response.body)) throw sealedWithoutKeys(request);
      cache.set(request, record);
      const refusal = keptRefusalOf(record.response);
      report(refusal ? IdempotencyEventType.RAN_WITHOUT_ANSWER : IdempotencyEventType.REPLAYED, request);
      if (refusal) throw refusal;
      return { replayed: true, response: record.response };
    }
    // The lease only bounds a call that crashed; a live one usually ends soon, so the client is told to come back
    // soon (its own backoff grows the wait with each attempt), never later than the lease allows a takeover.
    const retryAfterMs = Math.min(Math.max(record.leaseExpiresAt - at, 0), busyRetryAfterMs);
    return conflict(request, retryAfterMs, report);
  }

  function conflict(request: IdempotentRequest, retryAfterMs: number, report: Emit = emit): never {
    report(IdempotencyEventType.CONFLICT, request, { retryAfterMs });
    throw refusals.taken("held", { retryAfterMs });
  }

  /**
   * A store failure, said as what it means for the request where it happened (`refuse`, from the phases' table:
   * nothing ran, nothing was kept, or the outcome is unknown). A store that is not set up is answered as it is (a
   * 500 whose detail the engine logs for the operator and keeps from the client).
   */
  function storeFailure(
    request: IdempotentRequest,
    error: unknown,
    refuse: (options: IdempotencyErrorOptions) => IdempotencyError,
  ): IdempotencyError {
    emit(IdempotencyEventType.STORE_ERROR, request, { error });
    if (isIdempotencyError(error) && error.code === IdempotencyErrorCode.STORE_MISCONFIGURED) return error;
    return refuse({ cause: error, retryAfterMs: busyRetryAfterMs });
  }

  /** Atomic mode: the refusal that rolls back a call whose answer could not be stored after its work ran. */
  function rolledBack(request: IdempotentRequest, reason: unknown): IdempotencyError {
    logRolledBack(request, reason, log);
    return refusals.atomic([CallPhase.ANSWERING, "failed"]);
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

  function remember(request: IdempotentRequest, fence: number, response: StoredResponse, expiresAt: number): void {
    const { fingerprint } = request;
    cache.set(request, { state: RecordState.COMPLETED, fingerprint, fence, response, expiresAt });
  }

  return { emit, log, refusals, answerExisting, conflict, storeFailure, rolledBack, bounded, claimRequest, remember };
}
