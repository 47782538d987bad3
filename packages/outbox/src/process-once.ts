/**
 * Consumer-side de-duplication for any broker or job queue that delivers at least once. The handler runs in one
 * transaction with the insert of (consumer, event id): a redelivered event finds its row and is skipped; a crash
 * mid-handler rolls both back, so the redelivery runs it again; two deliveries at once meet on the row, and the
 * second waits for the first to commit (then skips) or roll back (then runs), for `lockTimeoutMs` at most: a
 * delivery stuck behind a hung one fails instead of holding its connection for ever. Acknowledge the message to the
 * broker only after `processOnce` resolves.
 *
 * Keep the records longer than the broker may redeliver (its retention, plus a margin: 14 days is a safe default),
 * then purge them with `purgeProcessedEvents`.
 */

import type { AnyPgDatabase, TransactionOf } from "@idemkit/drizzle";
import {
  commitKept,
  driverOf,
  isLockTimeout,
  named,
  provingCommit,
  purgeInBatches,
  qualifiedName,
  type Row,
  registerDatabase,
  run,
  runUnprepared,
  StatementLostBeforeWork,
  sqlStateOf,
  transactionOf,
} from "@idemkit/drizzle/internal";
import { type ProcessedEventsTable, type PurgeOptions, processedEvents } from "./outbox-schema.js";
import { type OutboxTelemetryOptions, outboxTelemetryOf } from "./telemetry.js";

/**
 * What `processOnce` takes: the database, the consumer's name, the event's id and how long to wait for another
 * delivery.
 */
export interface ProcessOnceOptions<TDb extends AnyPgDatabase> {
  /** The database the handler writes to: the record of processed events must be in it. */
  db: TDb;
  /** Who processes the event (`send-confirmation`): each consumer processes an event once. */
  consumer: string;
  /** The event's stable id: the outbox event's `key`, a broker's message id, a job's key. */
  eventId: string;
  /** The record's table, when it is not the default `processedEvents`. */
  table?: ProcessedEventsTable;
  /**
   * How long, in ms, to wait for another delivery of the same event still in its handler. Past it, `processOnce`
   * rejects with nothing done and the event is to be redelivered later. Default 10 s.
   */
  lockTimeoutMs?: number;
  /** A clock in ms since the epoch, for tests that move time; by default the database's. */
  now?: () => number;
  /**
   * Where its metrics go: the global OpenTelemetry meter provider by default; this one instead; or false for none,
   * its channel too. `include: { errorMessages: true }` adds a failed handler's message to its `idemkit:process-once`
   * message, which leaves it out by default.
   */
  telemetry?: OutboxTelemetryOptions | false;
}

/**
 * What `processOnce` answers: the handler's value when it ran here, or `processed: false` when the event was handled
 * before.
 */
export type ProcessOnceResult<T> = { processed: true; value: T } | { processed: false };

/**
 * Runs `handler` in a transaction unless `consumer` already processed `eventId`. Resolves `{ processed: false }` for
 * a duplicate; a handler's throw rolls everything back and rejects, so the event is redelivered and runs again.
 */
export async function processOnce<TDb extends AnyPgDatabase, T>(
  options: ProcessOnceOptions<TDb>,
  handler: (tx: TransactionOf<TDb>) => Promise<T>,
): Promise<ProcessOnceResult<T>> {
  const telemetry = outboxTelemetryOf(options.telemetry);
  const { consumer, eventId } = options;
  try {
    const result = await processedOnce(options, handler);
    telemetry.processed({ consumer, eventId, result: result.processed ? "processed" : "duplicate" });
    return result;
  } catch (error) {
    telemetry.processed({ consumer, eventId, result: "failed" }, error);
    throw error;
  }
}

async function processedOnce<TDb extends AnyPgDatabase, T>(
  { db, consumer, eventId, table = processedEvents, lockTimeoutMs = 10_000, now }: ProcessOnceOptions<TDb>,
  handler: (tx: TransactionOf<TDb>) => Promise<T>,
): Promise<ProcessOnceResult<T>> {
  if (typeof consumer !== "string" || consumer.length === 0 || typeof eventId !== "string" || eventId.length === 0) {
    throw new TypeError("processOnce(): consumer and eventId must be non-empty strings.");
  }
  if (!(Number.isFinite(lockTimeoutMs) && lockTimeoutMs >= 1)) {
    throw new TypeError(`processOnce(): lockTimeoutMs must be a number of ms, 1 or more (got ${lockTimeoutMs}).`);
  }
  const { MARK, CHECK } = statementsOf(table);
  registerDatabase(db);
  const driver = driverOf(db);
  const { pooler } = driver;
  await pooler.checked();
  let check: Promise<Row[]> | undefined;
  const outcome = await transactionOf(db, async (tx, own) => {
    const lockTimeout = `${Math.max(1, Math.round(lockTimeoutMs))}ms`;
    const [mark] = await run(own, MARK, [consumer, eventId, now?.() ?? null, lockTimeout]).catch((cause: unknown) => {
      // The handler has not run: the transaction is begun again where the driver allows (else refused below).
      if (pooler.beginsAgainAfter(cause)) throw new StatementLostBeforeWork(cause);
      if (!isLockTimeout(cause)) throw cause;
      throw new Error(
        `processOnce(): ${consumer} is still processing ${eventId} in another delivery after ${lockTimeoutMs} ms; ` +
          "nothing was done here. Redeliver the event later.",
        { cause },
      );
    });
    if (!mark?.first) return { processed: false } as const;
    const value = await handler(tx as TransactionOf<TDb>);
    // A handler that caught a failed statement of its own leaves the transaction aborted, and node-postgres then
    // answers its COMMIT as a rollback without an error: one more statement makes that an error, so the event is not
    // acknowledged as processed while nothing was kept. Sent without waiting for its answer, so that the COMMIT
    // leaves in its flight; its answer, with the COMMIT's proof where the driver needs one, is read once the
    // transaction is over.
    check = run(own, provingCommit(CHECK, driver), [consumer, eventId]);
    check.catch(() => {});
    return { processed: true, value } as const;
  }).then(
    (result) => ({ result }),
    (error: unknown) => ({ error }),
  );
  const [checked, checkFailure] = (await check?.then(
    ([row]) => [row, undefined] as const,
    (cause: unknown) => [undefined, cause ?? new Error("The check of the mark failed.")] as const,
  )) ?? [undefined, undefined];
  if (checkFailure !== undefined && sqlStateOf(checkFailure) === "25P02") {
    throw new Error(
      `processOnce(): ${consumer} could not commit ${eventId}: a statement of its handler failed (and was caught), ` +
        "so nothing was kept. Redeliver the event.",
      { cause: checkFailure },
    );
  }
  if ("error" in outcome) throw pooler.signOf(outcome.error) ?? outcome.error;
  if (checkFailure !== undefined) throw pooler.signOf(checkFailure) ?? checkFailure;
  // Where the driver may report a COMMIT done that PostgreSQL rolled back (see @idemkit/drizzle's commit-proof.ts),
  // the event is called processed only once it is known kept.
  if (outcome.result.processed) {
    await commitKept(
      driver,
      checked,
      () => runUnprepared(db, CHECK, [consumer, eventId]),
      `processOnce(): ${consumer}'s COMMIT of ${eventId} was reported done, and nothing of it was kept; redeliver it.`,
    );
  }
  return outcome.result as ProcessOnceResult<T>;
}

/** Deletes the records of events processed before `before` (ms since the epoch), in batches. Returns how many. */
export function purgeProcessedEvents({
  db,
  before,
  table = processedEvents,
  batchSize = 1_000,
}: PurgeOptions<ProcessedEventsTable>): Promise<number> {
  return purgeInBatches(db, statementsOf(table).PURGE, before, batchSize);
}

/** The statements over each table, built once: processOnce runs for every message a consumer takes. */
const statementsByTable = new WeakMap<ProcessedEventsTable, ReturnType<typeof processedStatements>>();
function statementsOf(table: ProcessedEventsTable): ReturnType<typeof processedStatements> {
  let statements = statementsByTable.get(table);
  if (!statements) {
    statements = processedStatements(qualifiedName(table));
    statementsByTable.set(table, statements);
  }
  return statements;
}

function processedStatements(table: string) {
  return named({
    /**
     * $1 consumer, $2 event id, $3 now (null: the database's), $4 how long to wait on a delivery in progress (its
     * lock_timeout, for this statement only). One row back, `first` true when this is the first time.
     */
    MARK: {
      name: "idemkit_processed_mark",
      steps: {
        previous: "select current_setting('lock_timeout') as lock_timeout, set_config('lock_timeout', $4::text, true)",
        marked: `insert into ${table} (consumer, event_id, processed_at)
            select $1::text, $2::text, coalesce(to_timestamp($3::float8 / 1000), statement_timestamp()) from previous
            on conflict do nothing returning 1`,
      },
      text: `select exists (select 1 from marked) as first,
          set_config('lock_timeout', previous.lock_timeout, true) as restored
        from previous`,
      columns: ["first", "restored"],
    },
    /** $1 consumer, $2 event id: fails (25P02) when the transaction was aborted. */
    CHECK: {
      name: "idemkit_processed_check",
      text: `select 1 as found from ${table} where consumer = $1::text and event_id = $2::text`,
      columns: ["found"],
    },
    /** $1 before (ms), $2 batch size. */
    PURGE: {
      name: "idemkit_processed_purge",
      steps: {
        doomed: `select consumer, event_id from ${table}
            where processed_at < to_timestamp($1::float8 / 1000) limit $2::int`,
        deleted: `delete from ${table} as t using doomed
            where t.consumer = doomed.consumer and t.event_id = doomed.event_id
            returning 1`,
      },
      text: "select count(*)::int as deleted from deleted",
      columns: ["deleted"],
    },
  });
}
