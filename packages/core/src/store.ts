/**
 * What a store must do, and nothing more. Stores persist and answer atomically; they do not decide. The engine
 * (`engine.ts`) owns every policy: fingerprint comparison, replay, conflict, TTL and lease lengths, and the clock.
 * Every store runs the same conformance suite (`@idemkit/core/testing`), so they can be swapped freely.
 *
 * A record's life, for one (scope, path, key):
 *
 *   absent ──claim──▶ in_progress(fence=n, lease until T) ──complete(n)──▶ completed(response) ──TTL──▶ absent
 *                        │   ▲  └─renew(n): T moves on while the call runs      (replayed until it expires)
 *                release(n)  └─ claim after T with the same fingerprint: takeover, fence m > n
 *                        ▼
 *                      absent ──claim──▶ in_progress(fence m > n)
 *
 * The fence is what makes takeover safe: `renew`, `complete` and `release` only act while the record still carries
 * the caller's fence, so a worker that was presumed dead cannot extend, overwrite or delete the claim of the one
 * that took over. That holds only if a fence never repeats for a key: every claim gets one greater than any the key
 * had before, also after its record was released, purged, expired or lost. A store that restarted its count at
 * each new record would hand a later claim the fence a presumed-dead worker still holds.
 */

/** Identifies one record. Scope isolates users (or tenants) from each other; path is the procedure. */
export interface RecordId {
  scope: string;
  path: string;
  key: string;
}

/** What is replayed: an HTTP-like status and the serialized body, both chosen by the adapter. */
export interface StoredResponse {
  /** Status the adapter answered with. At 400 and above the procedure failed and its effects were undone. */
  status: number;
  /** The response as the adapter serialized it; stores keep it byte for byte. */
  body: string;
}

/** A record's states: still running under a lease or a transaction, or completed with its answer. */
export const RecordState = {
  IN_PROGRESS: "in_progress",
  COMPLETED: "completed",
} as const;
/** One of `RecordState`'s values. */
export type RecordState = (typeof RecordState)[keyof typeof RecordState];

/** A record as a store returns it. Times are milliseconds since the epoch. */
export type StoredRecord =
  | {
      state: typeof RecordState.IN_PROGRESS;
      fingerprint: string;
      fence: number;
      /** When the running request's lease ends and another may take over. */
      leaseExpiresAt: number;
      expiresAt: number;
    }
  | {
      state: typeof RecordState.COMPLETED;
      fingerprint: string;
      fence: number;
      response: StoredResponse;
      expiresAt: number;
    };

/** One attempt to become the request that runs. */
export interface ClaimRequest {
  id: RecordId;
  fingerprint: string;
  /** The engine's clock, in ms since the epoch. Stores never read their own clock. */
  now: number;
  /** End of the lease this claim takes, in ms since the epoch. */
  leaseExpiresAt: number;
  /** When the record stops counting (TTL), in ms since the epoch. */
  expiresAt: number;
  /**
   * Atomic mode: how long this claim may wait for a transaction that holds the key, in ms: what is left of the
   * store's `waitMs` once the request got its connection. Absent: the store's own `waitMs`.
   */
  waitMs?: number;
  /**
   * Atomic mode: how much longer the claiming transaction may stay open, in ms (what is left of the engine's
   * `transactionTimeoutMs`). A store whose database can bound the transaction's statements on its side does, so
   * that a statement the engine gave up on does not hold the key past it. Absent: no bound (`transactionTimeoutMs`
   * is `Infinity`).
   */
  holdMs?: number | undefined;
}

/**
 * The answer to a claim:
 * - `claimed`: the caller runs the request under `fence`, greater than every fence the key had before. `takeover` is true when it replaced an in-progress
 *   record whose lease had ended (same fingerprint); a record past `expiresAt` counts as absent instead.
 * - `exists`: another request holds or completed the key; the engine decides what that means.
 */
export type ClaimResult =
  | { status: "claimed"; fence: number; takeover: boolean }
  | { status: "exists"; record: StoredRecord };

/**
 * A store. Its methods serve lease mode: every call is its own atomic write, independent of any business
 * transaction. A store that can also claim inside the procedure's transaction offers `atomic`; `Tx` is the
 * type of that transaction, which the procedure receives.
 */
export interface IdempotencyStore<Tx = never> {
  /**
   * Claims the key in one atomic step (never check-then-insert): inserts a record, or takes over an
   * in-progress one whose lease ended before `now` with the same fingerprint, or replaces one that expired
   * before `now`; otherwise returns the record as it stands.
   */
  claim(request: ClaimRequest): Promise<ClaimResult>;
  /**
   * Stores the response and marks the record completed, if the record still carries `fence` and is in
   * progress. Returns false when it does not: the lease was taken over and this result must be discarded.
   */
  complete(id: RecordId, fence: number, response: StoredResponse, expiresAt: number): Promise<boolean>;
  /** Deletes an in-progress record that still carries `fence`, so the next retry runs. False if it did not. */
  release(id: RecordId, fence: number): Promise<boolean>;
  /**
   * Moves the lease of an in-progress record that still carries `fence` to end at `leaseExpiresAt`, so a call
   * that is still running is not taken over. False when the record no longer carries it (taken over, or gone).
   */
  renew(id: RecordId, fence: number, leaseExpiresAt: number): Promise<boolean>;
  /** The record as it stands, expired or not; the engine applies the TTL. */
  get(id: RecordId): Promise<StoredRecord | undefined>;
  /**
   * Deletes records whose `expiresAt` is at or before `now`, at most `batchSize` per statement so a large table
   * is never locked for long. Leaves in-progress records whose lease is still running. Returns how many it deleted.
   */
  purgeExpired(options: { now: number; batchSize?: number }): Promise<number>;
  /** Present on stores that can claim inside the caller's own database transaction (atomic mode). */
  readonly atomic?: AtomicCapability<Tx>;
}

/** A store that runs in lease mode only: it has no transaction to share with the procedure (Redis, memory). */
export interface LeaseStore extends IdempotencyStore<never> {
  readonly atomic?: never;
}

/**
 * The modes `TStore` can run in, read from its type: both when it has `atomic`, lease alone when it has none, and
 * both when its type does not say (a plain `IdempotencyStore`, whose `atomic` may or may not be there).
 */
export type ModesOf<TStore> = TStore extends { readonly atomic?: never } ? "lease" : "atomic" | "lease";

/**
 * The mode a call runs in when none is given, read from the store's type as the engine reads it from the store:
 * atomic when it has `atomic`, else lease; either when its type does not say.
 */
export type DefaultModeOf<TStore> = TStore extends { readonly atomic: object }
  ? "atomic"
  : TStore extends { readonly atomic?: never }
    ? "lease"
    : "atomic" | "lease";

/** The transaction a store hands a protected call in `TMode`: its own in atomic mode, none in lease mode. */
export type ModeTransaction<TStore, TMode> = TMode extends "lease"
  ? undefined
  : TStore extends IdempotencyStore<infer Tx>
    ? Tx
    : never;

/** How long a duplicate waits for the call holding its key in atomic mode, unless the store says otherwise. */
export const DEFAULT_WAIT_MS = 5_000;

/**
 * Atomic mode: the claim, the procedure's own writes and the stored response share one database transaction,
 * so they commit together or not at all. A duplicate that arrives while the first is running is told the key is
 * held (at once with `peek`, else after waiting on the key's row up to the store's wait limit), waits outside the
 * transaction for up to `waitMs` in all, and then sees the committed response.
 */
export interface AtomicCapability<Tx> {
  /**
   * The database handle transactions are opened on, when the store has one, so an adapter that hands the
   * transaction to the app in place of the app's own handle can check that it is the same database.
   */
  readonly database?: unknown;
  /**
   * How long a duplicate waits for the running call, in ms. The engine spends it on getting a connection and on
   * the claim together, so a duplicate never waits longer than this in all. Default 5 seconds.
   */
  readonly waitMs?: number;
  /** Runs `work` in one transaction; a throw rolls everything back. */
  transaction<T>(work: (session: AtomicSession<Tx>) => Promise<T>): Promise<T>;
  /**
   * Whether a transaction holds the key now, and the record as committed: one read, outside any transaction, that
   * never waits. A store that offers it answers a claim `busy` at once while another transaction holds the key;
   * the engine then waits by asking this between short pauses, so a waiting duplicate holds no connection.
   */
  peek?(id: RecordId): Promise<{ running: boolean; record: StoredRecord | undefined }>;
}

/** The store's view of one atomic transaction. */
export interface AtomicSession<Tx> {
  /** The transaction handle the procedure writes with. */
  readonly tx: Tx;
  /**
   * Like {@link IdempotencyStore.claim}, inside the transaction. While another transaction holds the key it answers
   * `busy`: at once when the store offers `peek`, else once its wait limit passed. The transaction must then be
   * rolled back.
   */
  claim(request: ClaimRequest): Promise<ClaimResult | { status: "busy" }>;
  /**
   * Stores the response for the claimed key. With `undoEffects`, first rolls back every write the
   * procedure made after the claim, keeping the claim itself, so a failure is stored without its side effects.
   */
  complete(id: RecordId, response: StoredResponse, expiresAt: number, options: { undoEffects: boolean }): Promise<void>;
}

/**
 * Whether a claim may replace the record that stands in its way, and how: a record past its TTL counts as absent
 * (unless a request still holds a live lease on it), and an in-progress record whose lease ended may be taken
 * over by a request with the same fingerprint. Stores call this, then replace the record only if its fence is
 * still the one they read, so the decision and the write stay atomic.
 */
export function replacement(
  record: StoredRecord,
  { now, fingerprint }: Pick<ClaimRequest, "fingerprint" | "now">,
): { takeover: boolean } | undefined {
  if (isPurgeable(record, now)) return { takeover: false };
  const leaseEnded = record.state === RecordState.IN_PROGRESS && record.leaseExpiresAt <= now;
  return leaseEnded && record.fingerprint === fingerprint ? { takeover: true } : undefined;
}

/** Whether purge may delete the record: past its TTL and not held by a live lease. */
export function isPurgeable(record: StoredRecord, now: number): boolean {
  return record.expiresAt <= now && !(record.state === RecordState.IN_PROGRESS && record.leaseExpiresAt > now);
}
