/**
 * What became of one action, as a lookup answers it from the store: the shape every adapter's lookup answers with,
 * and the read behind it, bounded and counted as a call is.
 */

import { within } from "./deadline.js";
import { isSealedBody, sealedWithoutKeys } from "./encrypted-store.js";
import { type CallLimits, limitsOf } from "./engine/limits.js";
import { keptRefusalOf } from "./engine/stored-refusal.js";
import { IdempotencyError, IdempotencyErrorCode, isIdempotencyError } from "./errors.js";
import { checkIdentity } from "./key.js";
import { withoutOperatorDetail } from "./operator-detail.js";
import { type IdempotencyStore, type RecordId, RecordState, type StoredResponse } from "./store.js";

/**
 * What became of one action (a procedure and a key), as the outcome lookup answers it: the server's
 * `outcomeLookup` (`@idemkit/trpc`) and the hook's reconciliation (`@idemkit/react`) share this shape.
 */
export type IdempotencyOutcomeAnswer<TData = unknown> =
  /** A request with this key is running now: ask again shortly. */
  | { state: "running" }
  /** It ran and committed: `data` is its result, as a replay would answer it. */
  | { state: "completed"; data: TData }
  /** It ran and failed, and the failure was stored (a 4xx, or a 5xx with `storeServerErrors`): sending it again answers the same. */
  | { state: "failed"; status: number; error: { code: string; message: string } }
  /**
   * It ran, but its answer could not be stored (RAN_WITHOUT_ANSWER): a refusal is kept for the key instead.
   * Sending it again with the same key gets that refusal and never runs it again; under a new key it would run a
   * second time, so a client keeps the key.
   */
  | { state: "refused"; status: number; error: { code: string; message: string } }
  /**
   * Nothing is kept for it: never received, rolled back, expired, or (lease mode) a call that died or could not
   * store its result, whose effects outside the transaction may have happened. Sending it again with the same key
   * runs it, once.
   */
  | { state: "unknown" };

/** What a store holds for one action, as a lookup reads it: the stored answer itself, for the adapter to decode. */
export type RecordOutcome =
  | { state: "running" }
  | { state: "stored"; response: StoredResponse }
  /** It ran, but its answer could not be stored: the key is kept refused with this, never run again. */
  | { state: "refused"; refusal: IdempotencyError }
  /** Nothing kept: never received, rolled back, expired, or a lease that ended without an answer. */
  | { state: "unknown" };

/** How a lookup is bounded: the endpoint's limits and clock, and how long the store may take. */
export interface LookupOptions {
  /** The clock, in ms since the epoch, to tell expired records and count under the limits. */
  now: () => number;
  /** The limits of the endpoint the action was sent to: a lookup counts as one of its calls. */
  limits?: CallLimits | undefined;
  /** The longest the read may take, in ms, before the lookup is answered STORE_UNAVAILABLE. Default 5 s. */
  storeTimeoutMs?: number | undefined;
  /** When a lookup refused as one too many running is told to come back, in ms. Default 1 s. */
  busyRetryAfterMs?: number | undefined;
}

/**
 * What became of one action, as every adapter's lookup answers it: counted under the endpoint's limits like a call
 * (a scope probing keys is a scope starting new ones), read within `storeTimeoutMs`, a store that fails answered
 * STORE_UNAVAILABLE and one not set up without its detail, as a call would be.
 */
export async function lookUpOutcome(
  store: IdempotencyStore<unknown>,
  id: RecordId,
  { now, limits, storeTimeoutMs = 5_000, busyRetryAfterMs = 1_000 }: LookupOptions,
): Promise<RecordOutcome> {
  checkIdentity(id);
  const done = limitsOf(limits, now).admit(id, busyRetryAfterMs);
  try {
    return await within(
      recordOutcome(store, id, now()),
      storeTimeoutMs,
      () => new Error(`The store did not answer the lookup within ${storeTimeoutMs} ms.`),
    );
  } catch (error) {
    if (isIdempotencyError(error)) throw withoutOperatorDetail(error);
    throw new IdempotencyError(
      IdempotencyErrorCode.STORE_UNAVAILABLE,
      "The idempotency store is unavailable, so what became of this action is not known yet; ask again later.",
      { cause: error, retryAfterMs: busyRetryAfterMs },
    );
  } finally {
    done();
  }
}

/**
 * Reads what became of one action without claiming it: one read outside any transaction (the store's `peek` where
 * it has one, so a transaction holding the key counts as running; on a database of one connection, such as PGlite,
 * the read waits its turn behind that transaction). A live lease holds its record even past the TTL,
 * as the engine has it; a lease that ended without an answer leaves nothing kept, and the next call with the key
 * runs.
 */
async function recordOutcome(store: IdempotencyStore<unknown>, id: RecordId, now: number): Promise<RecordOutcome> {
  const { running, record } = store.atomic?.peek
    ? await store.atomic.peek(id)
    : { running: false, record: await store.get(id) };
  if (running) return { state: "running" };
  if (record?.state === RecordState.IN_PROGRESS && record.leaseExpiresAt > now) return { state: "running" };
  if (!record || record.expiresAt <= now || record.state === RecordState.IN_PROGRESS) return { state: "unknown" };
  if (isSealedBody(record.response.body)) throw sealedWithoutKeys(id);
  const refusal = keptRefusalOf(record.response);
  if (refusal) return { state: "refused", refusal };
  return { state: "stored", response: record.response };
}
