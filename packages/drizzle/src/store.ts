/**
 * The PostgreSQL store, over any Drizzle PostgreSQL database: postgres.js, PGlite or node-postgres. Its statements
 * are fixed SQL texts, each sent as one prepared statement through Drizzle's public query builder (see
 * `statements.ts`): one round trip each, and the same behaviour on every driver.
 *
 * The claim is one statement. It inserts the record or, on conflict, returns the row that stands in the way:
 *
 *   claim ─▶ INSERT … ON CONFLICT DO NOTHING ─┬─ inserted ─────────────────────────────▶ claimed(new fence)
 *                                             └─ conflict ─▶ row from the same statement ─┬─ replay / refuse
 *                                                                                         └─ expired or lease ended:
 *                                                            UPDATE … WHERE fence = seen ─▶ claimed(new fence)
 *
 * Every fence is drawn from the fence column's sequence, on insert and on replace alike, so a fence never repeats
 * for a key: not after a release, a purge or an expiry deleted its record. A sequence only moves forward (also
 * across a failover), whatever the hosts' clocks say.
 *
 * ON CONFLICT DO NOTHING takes no row lock, so replays never write. In atomic mode the claim also takes an
 * advisory lock on the record id, held until its transaction ends: a duplicate's claim finds it taken and answers
 * `busy` at once, instead of waiting on the row while holding a connection, and the engine waits outside any
 * transaction, asking `peek` between pauses. A row held without that lock (an operator's, a lease-mode claim in
 * flight) is still waited for, bounded by `lock_timeout`, which the same statement sets for its own duration and
 * then puts back: the procedure's own statements keep the caller's setting.
 */

import type { IdempotencyStore, RecordId, StoredResponse } from "@idemkit/core";
import { IdempotencyError, IdempotencyErrorCode, ProcedureTransactionError } from "@idemkit/core";
import { checkedNumber, DEFAULT_WAIT_MS } from "@idemkit/core/internal";
import type { AtomicCapability, AtomicSession, ClaimRequest, ClaimResult, StoredRecord } from "@idemkit/core/store";
import { replacement } from "@idemkit/core/store";
import { bypassGuard } from "./bypass-guard.js";
import { commitKept, provingCommit } from "./commit-proof.js";
import type { AnyPgDatabase, Executor, Row } from "./database.js";
import { driverOf } from "./driver.js";
import { againIfConnectionLost, isLockTimeout, isProcedureFailure } from "./driver-errors.js";
import { registerDatabase } from "./prepared-queries.js";
import { claimParams, claimSavepoint, keyOf, statementsFor, toRecord, UNDO } from "./record-statements.js";
import { type IdempotencyKeysTable, idempotencyKeys } from "./schema.js";
import { qualifiedName, type Statement } from "./statement-text.js";
import { command, purgeInBatches, run, runUnprepared, type Trailing } from "./statements.js";
import { StatementLostBeforeWork, type TransactionOf, transactionOf } from "./transaction.js";

/** What `drizzleStore` takes: your Drizzle database, and the table and waits when not the defaults. */
export interface DrizzleStoreOptions<TDb extends AnyPgDatabase> {
  /**
   * The Drizzle database (postgres.js, PGlite, node-postgres). It must have the records' table (`table`):
   * migrate it from `idempotencyKeys` in your schema with drizzle-kit, or apply this repository's `drizzle/`.
   * One database for the store's life: its statements are prepared on it once and run again, so a `db` that
   * picks a database per call (a tenant's, through a Proxy) needs a store per database.
   */
  db: TDb;
  /**
   * Atomic mode: how long a duplicate waits for the call holding its key, in ms, before it is answered 409
   * IN_PROGRESS; a request still queued for a pool connection by then is answered 503. Default 5 seconds.
   */
  waitMs?: number;
  /**
   * The table the records are in, when it is not the default `idempotencyKeys`: one made with
   * `idempotencyKeysTable(name, schema)` and exported from your schema. Default `idempotencyKeys`.
   */
  table?: IdempotencyKeysTable;
  /**
   * Whether atomic mode watches for a procedure's statements sent through the database instead of its transaction
   * (see "Writes that bypass the transaction"): on one connection (PGlite, a pool of one) such a statement is
   * refused at once, where it would wait forever; on a pool, development builds warn. The watch wraps the public
   * methods of your driver's client (`db.$client`), Drizzle having no hook that sees a statement before it is sent;
   * false leaves your client as it is, and a bypass on one connection then hangs until something times it out (a
   * client is wrapped once, for every store on it: give every store on that `db` the same setting). Default true.
   */
  watchBypasses?: boolean;
}

/** A store over Drizzle: lease mode through its methods, atomic mode through `atomic`. */
export interface DrizzleStore<TDb extends AnyPgDatabase> extends IdempotencyStore<TransactionOf<TDb>> {
  readonly atomic: AtomicCapability<TransactionOf<TDb>>;
}

/** How many times a claim re-reads after losing a race (a row deleted or replaced between two statements). */
const CLAIM_ATTEMPTS = 5;

type AtomicClaimResult = ClaimResult | { status: "busy" };

/** A claim inside a transaction, which takes the key's advisory lock. */
interface Claiming {
  /**
   * Sent behind each statement that may win the claim (atomic mode's savepoint), so that undoing the procedure's
   * writes never undoes the claim itself, whichever statement won it.
   */
  followedBy?: Trailing;
}

/** Creates the PostgreSQL store. Atomic mode is the default in the middleware; lease mode works as well. */
export function drizzleStore<TDb extends AnyPgDatabase>({
  db,
  waitMs = DEFAULT_WAIT_MS,
  table = idempotencyKeys,
  watchBypasses = true,
}: DrizzleStoreOptions<TDb>): DrizzleStore<TDb> {
  checkedNumber("drizzleStore()", "waitMs", waitMs);
  const statements = statementsFor(qualifiedName(table));
  const guard = watchBypasses ? bypassGuard(db) : undefined;
  registerDatabase(db);
  const driver = driverOf(db);
  const { pooler } = driver;
  const savepoint = claimSavepoint(driver);

  /**
   * Claims `request` through `executor`: the database itself (lease mode), or an atomic transaction (`inTransaction`),
   * which takes the key's advisory lock and so answers `busy` at once while another transaction holds the key.
   */
  function claimWith(executor: Executor, request: ClaimRequest): Promise<ClaimResult>;
  function claimWith(executor: Executor, request: ClaimRequest, inTransaction: Claiming): Promise<AtomicClaimResult>;
  async function claimWith(executor: Executor, request: ClaimRequest, inTransaction?: Claiming) {
    const holdMs = inTransaction && request.holdMs !== undefined ? Math.max(1, request.holdMs) : null;
    const claimParamsOf = () => [...claimParams(request, waitMs), inTransaction !== undefined, holdMs];
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
      const [row] = await run(executor, statements.CLAIM, claimParamsOf(), inTransaction?.followedBy);
      if (row?.claimed_fence != null) {
        return { status: "claimed", fence: Number(row.claimed_fence), takeover: false };
      }
      const seen = row?.state != null ? toRecord(row) : undefined;
      if (row?.free === false) {
        // Another transaction holds the key: its answer, once committed, is what a duplicate replays.
        return seen && !replacement(seen, request) ? { status: "exists", record: seen } : { status: "busy" };
      }
      // The statement's snapshot predates a row committed while it waited: read again with a fresh one.
      const record = seen ?? (await getWith(executor, request.id));
      if (!record) continue;
      const replaced = replacement(record, request);
      if (!replaced) return { status: "exists", record };
      const replacing = [...claimParams(request, waitMs), record.fence];
      const [updated] = await run(executor, statements.REPLACE, replacing, inTransaction?.followedBy);
      if (updated?.fence != null) {
        return { status: "claimed", fence: Number(updated.fence), takeover: replaced.takeover };
      }
    }
    throw new Error(`Claim for ${request.id.path} kept racing with other requests; giving up.`);
  }

  async function getWith(executor: Executor, id: RecordId): Promise<StoredRecord | undefined> {
    const [row] = await run(executor, statements.GET, keyOf(id));
    return row && toRecord(row);
  }

  /** The completed record's row (with the COMMIT's proof, through `provingCommit`); undefined when none was. */
  async function completeWith(
    executor: Executor,
    id: RecordId,
    fence: number,
    response: StoredResponse,
    expiresAt: number,
    statement: Statement = statements.COMPLETE,
  ): Promise<Row | undefined> {
    const [row] = await run(executor, statement, [...keyOf(id), expiresAt, response.status, response.body, fence]);
    return row;
  }

  const atomic: AtomicCapability<TransactionOf<TDb>> = {
    database: db,
    waitMs,
    async peek(id) {
      await pooler.checked();
      const [row] = await againIfConnectionLost(() => run(db, statements.PEEK, keyOf(id)));
      return { running: row?.running === true, record: row?.state != null ? toRecord(row) : undefined };
    },
    transaction: atomicTransaction,
  };

  async function atomicTransaction<T>(work: (session: AtomicSession<TransactionOf<TDb>>) => Promise<T>): Promise<T> {
    await pooler.checked();
    // The completing update is sent without waiting for its answer, so that drizzle's COMMIT follows it in
    // the same flight. Its outcome is checked here, after the commit: had it failed, PostgreSQL turned the
    // COMMIT into a rollback of everything, which is then reported instead of the result.
    let claimed: (ClaimRequest & { fence: number }) | undefined;
    let completing: { response: StoredResponse; expiresAt: number; done: Promise<Row | undefined> } | undefined;
    let finished: { value: Awaited<ReturnType<typeof work>> } | undefined;
    try {
      const result = await transactionOf(db, transact);
      const completed = completing && (await completing.done);
      if (completing && !completed) throw new Error("The claimed record vanished inside its own transaction.");
      if (completed && claimed) {
        const kept = [...keyOf(claimed.id), claimed.fence];
        // Read unprepared: see `runUnprepared`. The record is there, under the transaction's fence, only if the
        // COMMIT was.
        await commitKept(
          driver,
          completed,
          () => runUnprepared(db, statements.KEPT, kept),
          "A transaction's COMMIT was reported done, and nothing of it was kept.",
        );
      }
      return result;
    } catch (error) {
      const sign = pooler.signOf(error);
      if (sign !== undefined) throw sign;
      if (!finished || !completing || !claimed || !(await isProcedureFailure(error, completing.done))) throw error;
      // The procedure caught a failed statement of its own and went on, and the driver would not commit. Its
      // writes are gone with the transaction; an error answer, which was to undo them anyway, is still kept,
      // in a transaction of its own. A success cannot be: it is the procedure's failure, not the store's.
      if (completing.response.status < 400) throw new ProcedureTransactionError(claimed.id.path, error);
      await recordAgain(claimed, completing.response, completing.expiresAt);
      return finished.value;
    }

    /** `tx` for the procedure, `own` for the store's statements (see `transaction-fence.ts`). */
    async function transact(tx: TransactionOf<TDb>, own: Executor) {
      let fence: number | undefined;
      const session: AtomicSession<TransactionOf<TDb>> = {
        tx: tx as TransactionOf<TDb>,
        async claim(request) {
          guard?.name(request.id.path);
          // The savepoint leaves with the claim: it costs no round trip of its own.
          let outcome: AtomicClaimResult;
          try {
            outcome = await claimWith(own, request, { followedBy: savepoint });
          } catch (error) {
            if (isLockTimeout(error)) return { status: "busy" };
            // Nothing of the procedure ran yet, so the transaction is begun again.
            if (pooler.beginsAgainAfter(error)) throw new StatementLostBeforeWork(error);
            throw error;
          }
          if (outcome.status === "claimed") {
            fence = outcome.fence;
            claimed = { ...request, fence };
          }
          return outcome;
        },
        async complete(id, response, expiresAt, { undoEffects }) {
          if (fence === undefined) throw new Error("complete() called before a successful claim()");
          // Answered before the completion is sent: Drizzle sends a command (`execute`) and a prepared statement
          // by different paths, and on some versions the later-sent one reaches the driver first. A failed undo
          // leaves the transaction aborted, which the completion then reports.
          if (undoEffects) await command(own, UNDO).catch(() => {});
          const done = completeWith(own, id, fence, response, expiresAt, provingCommit(statements.COMPLETE, driver));
          done.catch(() => {});
          completing = { response, expiresAt, done };
        },
      };
      const value = await (guard ? guard.within(() => work(session)) : work(session));
      finished = { value };
      return value;
    }
  }

  /**
   * Stores an error answer whose transaction the driver refused to commit, as the first request for its key. A
   * duplicate that waited for the key may have claimed it in between: then that one answers, and this call is told
   * to come back for its result, as any duplicate would be.
   */
  async function recordAgain(request: ClaimRequest, response: StoredResponse, expiresAt: number): Promise<void> {
    const recorded = await transactionOf(db, async (_tx, own) => {
      const outcome = await claimWith(own, request, {});
      if (outcome.status !== "claimed") return false;
      if (!(await completeWith(own, request.id, outcome.fence, response, expiresAt))) throw new Error("lost");
      return true;
    }).catch((error: unknown) => {
      if (isLockTimeout(error)) return false;
      throw error;
    });
    if (!recorded) {
      throw new IdempotencyError(
        IdempotencyErrorCode.IN_PROGRESS,
        "Another request with this Idempotency-Key took over while this one was recorded; retry for its answer.",
        { retryAfterMs: 1_000 },
      );
    }
  }

  // Every call below is safe to send again on another connection when its own was lost under it: the writes act
  // only under the caller's fence, and a claim sent again after its first went through finds that record held (409
  // until its lease ends, as when no claim is sent again).
  return {
    atomic,
    async claim(request) {
      await pooler.checked();
      return againIfConnectionLost(() => claimWith(db, request));
    },
    complete: (id, fence, response, expiresAt) =>
      againIfConnectionLost(async () => (await completeWith(db, id, fence, response, expiresAt)) !== undefined),
    release: (id, fence) =>
      againIfConnectionLost(async () => (await run(db, statements.RELEASE, [...keyOf(id), fence])).length === 1),
    renew: (id, fence, leaseExpiresAt) =>
      againIfConnectionLost(
        async () => (await run(db, statements.RENEW, [...keyOf(id), fence, leaseExpiresAt])).length === 1,
      ),
    async get(id) {
      await pooler.checked();
      return againIfConnectionLost(() => getWith(db, id));
    },
    purgeExpired: ({ now, batchSize = 1_000 }) => purgeInBatches(db, statements.PURGE, now, batchSize),
  };
}
