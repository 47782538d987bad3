/**
 * The outbox's relay: takes the events that are due in batches and hands each to the app's `publish` (a broker,
 * a job queue, a webhook). Several relays (processes, machines) run side by side: a batch is claimed with
 * `FOR UPDATE SKIP LOCKED`, and each claimed event is leased to its relay, so two relays never publish an event at
 * the same time. Delivery is at least once: a relay that dies after publishing and before marking the event leaves
 * it to be published again once its lease ends; consumers de-duplicate with `processOnce`.
 */

import { outboxStatements, type PublishedEvent, toPublishedEvent } from "./outbox.js";
import { type OutboxEventsTable, outboxEvents } from "./outbox-schema.js";
import { type AnyPgDatabase, purgeInBatches, qualifiedName, run } from "./statements.js";

/** What the relay reports, for logs and metrics. */
export type RelayEvent =
  | { type: "published"; event: PublishedEvent }
  | { type: "failed"; event: PublishedEvent; error: unknown; retryAt: number }
  | { type: "dead"; event: PublishedEvent; error: unknown }
  | { type: "error"; error: unknown };

export interface RelayOptions {
  /** The database whose outbox to publish. */
  db: AnyPgDatabase;
  /** Publishes one event. A throw (or a rejection) fails this attempt: it is retried after a backoff. */
  publish: (event: PublishedEvent) => Promise<void> | void;
  /** The outbox table, when it is not the default `outboxEvents`. */
  table?: OutboxEventsTable;
  /** Events claimed at a time. Default 50. */
  batchSize?: number;
  /**
   * How long a claimed event stays this relay's, in ms: longer than publishing a whole batch takes. Past it,
   * another relay may publish it again. Default 60 s.
   */
  leaseMs?: number;
  /** Attempts before an event is dead (kept, not retried until `retryDead`). Default 10. */
  maxAttempts?: number;
  /** The pause after a failed attempt, in ms. Default: 1 s doubling per attempt, at most 5 minutes. */
  retryDelayMs?: (attempt: number) => number;
  /** The pause between batches when nothing was due, in ms. Default 500. */
  idleMs?: number;
  /** The clock, in ms since the epoch. Injected so tests can move time. */
  now?: () => number;
  /** Called for every outcome. A throw is ignored: an observer never changes what the relay does. */
  onEvent?: (event: RelayEvent) => void;
}

/** What one batch did. */
export interface RelayBatch {
  published: number;
  failed: number;
  dead: number;
}

const DEFAULT_RETRY_DELAY_MS = (attempt: number) => Math.min(1_000 * 2 ** (attempt - 1), 5 * 60_000);

/** Creates a relay. Run it with `start()` (a loop until `stop()`), or one batch at a time with `runOnce()`. */
export function createRelay({
  db,
  publish,
  table = outboxEvents,
  batchSize = 50,
  leaseMs = 60_000,
  maxAttempts = 10,
  retryDelayMs = DEFAULT_RETRY_DELAY_MS,
  idleMs = 500,
  now = Date.now,
  onEvent,
}: RelayOptions) {
  const statements = outboxStatements(qualifiedName(table));
  const report = (event: RelayEvent) => {
    try {
      onEvent?.(event);
    } catch {
      // An observer's failure is its own.
    }
  };

  async function publishOne(event: PublishedEvent, batch: RelayBatch): Promise<void> {
    try {
      await publish(event);
    } catch (error) {
      const retryAt = now() + retryDelayMs(event.attempt);
      const [row] = await run(db, statements.FAILED, [event.id, event.attempt, retryAt, maxAttempts, describe(error)]);
      if (row?.state === "dead") {
        batch.dead++;
        report({ type: "dead", event, error });
      } else {
        batch.failed++;
        report({ type: "failed", event, error, retryAt });
      }
      return;
    }
    // Not marked (another relay took it over after this one's lease ended): it was published all the same.
    await run(db, statements.PUBLISHED, [event.id, event.attempt, now()]);
    batch.published++;
    report({ type: "published", event });
  }

  /** Claims one batch of due events and publishes them in order. */
  async function runOnce(): Promise<RelayBatch> {
    const rows = await run(db, statements.CLAIM, [now(), batchSize, leaseMs]);
    const events = rows.map(toPublishedEvent).sort((a, b) => a.id - b.id);
    const batch: RelayBatch = { published: 0, failed: 0, dead: 0 };
    for (const event of events) await publishOne(event, batch);
    return batch;
  }

  let loop: Promise<void> | undefined;
  let stopping: AbortController | undefined;

  return {
    runOnce,
    /** Publishes until `stop()`: batch after batch while events are due, pausing `idleMs` when none are. */
    start(): void {
      if (loop) return;
      const stop = new AbortController();
      stopping = stop;
      loop = (async () => {
        while (!stop.signal.aborted) {
          let idle: boolean;
          try {
            const batch = await runOnce();
            idle = batch.published + batch.failed + batch.dead === 0;
          } catch (error) {
            // The database is away: try again after a pause, as the relay must outlive an outage.
            report({ type: "error", error });
            idle = true;
          }
          if (idle) await pause(idleMs, stop.signal);
        }
      })();
    },
    /** Stops after the batch in flight; resolves once it is done. */
    async stop(): Promise<void> {
      stopping?.abort();
      await loop;
      loop = undefined;
    },
  };
}

export type Relay = ReturnType<typeof createRelay>;

/**
 * Puts dead events (all of them, or those in `ids`) back to pending with fresh attempts: after the cause was
 * fixed. Returns the ids put back.
 */
export async function retryDeadEvents({
  db,
  ids,
  table = outboxEvents,
  now = Date.now,
}: {
  db: AnyPgDatabase;
  ids?: number[];
  table?: OutboxEventsTable;
  now?: () => number;
}): Promise<number[]> {
  const rows = await run(db, outboxStatements(qualifiedName(table)).RETRY_DEAD, [now(), ids ?? null]);
  return rows.map((row) => Number(row.id));
}

/** Deletes events published before `before` (ms since the epoch), in batches. Returns how many. */
export function purgePublishedEvents({
  db,
  before,
  table = outboxEvents,
  batchSize = 1_000,
}: {
  db: AnyPgDatabase;
  before: number;
  table?: OutboxEventsTable;
  batchSize?: number;
}): Promise<number> {
  return purgeInBatches(db, outboxStatements(qualifiedName(table)).PURGE, before, batchSize);
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
