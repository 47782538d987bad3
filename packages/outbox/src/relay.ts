/**
 * The outbox's relay: takes the events that are due in batches and hands each to the app's `publish` (a broker,
 * a job queue, a webhook). Several relays (processes, machines) run side by side: a batch is claimed with
 * `FOR UPDATE SKIP LOCKED`, and each claimed event is leased to its relay, so two relays never publish an event at
 * the same time. Delivery is at least once: a relay that dies after publishing and before marking the event leaves
 * it to be published again once its lease ends; consumers de-duplicate with `processOnce`.
 */

import { checkedNumber } from "@idemkit/core/internal";
import type { AnyPgDatabase } from "@idemkit/drizzle";
import { driverOf, purgeInBatches, qualifiedName, type Row, registerDatabase, run } from "@idemkit/drizzle/internal";
import { outboxStatements, type PublishedEvent, toPublishedEvent } from "./outbox.js";
import { type OutboxEventsTable, outboxEvents, type PurgeOptions } from "./outbox-schema.js";
import { type OutboxTelemetryOptions, outboxTelemetryOf, type RelayEvent } from "./telemetry.js";

/** What `createRelay` takes: the database, how to publish an event, and how often and how hard to try. */
export interface RelayOptions {
  /** The database whose outbox to publish: one for the relay's life, as its statements are prepared on it once. */
  db: AnyPgDatabase;
  /**
   * Publishes one event. A throw (or a rejection) fails this attempt: it is retried after a backoff. `signal`
   * aborts when `publishTimeoutMs` has passed: stop then, the attempt has failed.
   */
  publish: (event: PublishedEvent, options: { signal: AbortSignal }) => Promise<void> | void;
  /** The outbox table, when it is not the default `outboxEvents`. */
  table?: OutboxEventsTable;
  /** Events claimed at a time. Default 50. */
  batchSize?: number;
  /**
   * How long a claimed event stays this relay's, in ms: longer than publishing a whole batch takes. Past it,
   * another relay may publish it again. Default 60 s.
   */
  leaseMs?: number;
  /**
   * The longest one publish may take, in ms; past it, its signal aborts and the attempt counts as failed. Keep it
   * well under `leaseMs`: an event is this relay's alone only while its lease lasts. Default 15 s.
   */
  publishTimeoutMs?: number;
  /** Attempts before an event is dead (kept, not retried until `retryDeadEvents`). Default 10. */
  maxAttempts?: number;
  /** The pause after a failed attempt, in ms. Default: 1 s doubling per attempt, at most 5 minutes. */
  retryDelayMs?: (attempt: number) => number;
  /** The pause between batches when nothing was due, in ms. Default 500. */
  idleMs?: number;
  /**
   * A clock in ms since the epoch, for tests that move time. By default due times and leases are the database's,
   * which every host running a relay shares; this process's clock only measures how long a batch has taken.
   */
  now?: () => number;
  /** Called for every outcome. A throw is ignored: an observer never changes what the relay does. */
  onEvent?: (event: RelayEvent) => void;
  /**
   * Where its metrics go (see `telemetry.ts` for their names): the global OpenTelemetry meter provider by default,
   * a no-op until the app registers an SDK; this one instead; or false for none, its channel too. `include` adds
   * payloads and error messages to its `idemkit:relay` messages, which leave them out by default.
   */
  telemetry?: OutboxTelemetryOptions | false;
}

/** What one batch did. */
export interface RelayBatch {
  published: number;
  failed: number;
  dead: number;
}

/** The longest pause between attempts while the database is away. */
const MAX_ERROR_PAUSE_MS = 30_000;
const DEFAULT_RETRY_DELAY_MS = (attempt: number) => Math.min(1_000 * 2 ** (attempt - 1), 5 * 60_000);

/** Creates a relay. Run it with `start()` (a loop until `stop()`), or one batch at a time with `runOnce()`. */
export function createRelay({
  db,
  publish,
  table = outboxEvents,
  batchSize = 50,
  leaseMs = 60_000,
  publishTimeoutMs = 15_000,
  maxAttempts = 10,
  retryDelayMs = DEFAULT_RETRY_DELAY_MS,
  idleMs = 500,
  now,
  onEvent,
  telemetry: telemetryOptions,
}: RelayOptions) {
  checkedNumber("createRelay()", "batchSize", batchSize, { min: 1, whole: true });
  checkedNumber("createRelay()", "leaseMs", leaseMs, { min: 1 });
  checkedNumber("createRelay()", "publishTimeoutMs", publishTimeoutMs, { min: 1 });
  checkedNumber("createRelay()", "maxAttempts", maxAttempts, { min: 1, whole: true, unlimited: true });
  checkedNumber("createRelay()", "idleMs", idleMs);
  const databaseNow = () => now?.() ?? null;
  const elapsed = now ?? Date.now;
  const statements = outboxStatements(qualifiedName(table));
  registerDatabase(db);
  const telemetry = outboxTelemetryOf(telemetryOptions);
  const report = (event: RelayEvent) => {
    telemetry.relayEvent(event);
    try {
      onEvent?.(event);
    } catch {
      // An observer's failure is its own.
    }
  };

  /**
   * Publishes one claimed event within `publishTimeoutMs`, then marks it published, or failed for a retry. Resolves
   * once publish has settled, with the mark still on its way (`marked`): the next event is published while the
   * database commits this one's mark, so a batch's marks commit together instead of one fsync after another.
   */
  async function publishOne(row: Row, batch: RelayBatch, claimedAt: number): Promise<{ marked: Promise<void> }> {
    const claimed = { id: Number(row.id), attempt: Number(row.attempts) };
    let event: PublishedEvent | undefined;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), publishTimeoutMs);
    // Registered before publish is called, so that a publish that settles on its abort still counts as timed out.
    const timedOut = new Promise<never>((_, reject) => {
      timeout.signal.addEventListener("abort", () =>
        reject(new Error(`publish did not finish within ${publishTimeoutMs} ms`)),
      );
    });
    // Settled or not, nobody else waits on it: a timer that fires after the race is over must not go unhandled.
    timedOut.catch(() => {});
    try {
      event = toPublishedEvent(row);
      await Promise.race([timedOut, publish(event, { signal: timeout.signal })]);
    } catch (error) {
      const delayMs = retryDelayMs(claimed.attempt);
      const retryAt = elapsed() + delayMs;
      // An event whose payload did not parse is reported without it.
      const reported = event ?? toPublishedEvent(row, false);
      const params = [claimed.id, claimed.attempt, databaseNow(), maxAttempts, describe(error), delayMs];
      const marked = run(db, statements.FAILED, params).then(([mark]) => {
        if (!mark) report({ type: "lease_lost", event: reported });
        else if (mark.state === "dead") {
          batch.dead++;
          report({ type: "dead", event: reported, error });
        } else {
          batch.failed++;
          report({ type: "failed", event: reported, error, retryAt });
        }
      });
      return { marked };
    } finally {
      clearTimeout(timer);
    }
    const published = event;
    const marked = run(db, statements.PUBLISHED, [claimed.id, claimed.attempt, databaseNow()]).then(([mark]) => {
      batch.published++;
      // An event another relay took over is measured when that relay marks it.
      if (mark) telemetry.published(published.topic, Number(row.waited_ms) + elapsed() - claimedAt);
      // Published all the same; another relay took it over after this one's lease ended, and will publish it again.
      report(mark ? { type: "published", event: published } : { type: "lease_lost", event: published });
    });
    return { marked };
  }

  /** Relays one batch (see `relayBatch`); a batch that fails is reported as an `error` event, then thrown. */
  async function runOnce(): Promise<RelayBatch> {
    try {
      return await relayBatch();
    } catch (error) {
      // The database is away (or the table is not there): one failed batch, reported once.
      report({ type: "error", error });
      throw error;
    }
  }

  /**
   * Parks as dead the events whose lease ended `maxAttempts` times without a relay marking them (each relay that
   * took one died or hung in publish), then claims one batch of due events and publishes them, oldest first, while
   * the batch's lease leaves time for another publish. Those it has no time left for are given back at once, their
   * claim uncharged: an attempt counts only when publish was called.
   */
  async function relayBatch(): Promise<RelayBatch> {
    const batch: RelayBatch = { published: 0, failed: 0, dead: 0 };
    await driverOf(db).pooler.checked();
    for (const row of await run(db, statements.EXHAUSTED, [databaseNow(), maxAttempts])) {
      batch.dead++;
      report({ type: "dead", event: toPublishedEvent(row, false), error: new Error(String(row.last_error)) });
    }
    const claimedAt = elapsed();
    const rows = await run(db, statements.CLAIM, [databaseNow(), batchSize, leaseMs, maxAttempts]);
    // RETURNING has no order of its own.
    rows.sort((a, b) => Number(a.id) - Number(b.id));
    const marks: Array<Promise<void>> = [];
    let markFailed = false;
    let handed = 0;
    for (const row of rows) {
      // Stop once a mark has failed: the database is away, and what is published now would be published again.
      if (markFailed || elapsed() + publishTimeoutMs > claimedAt + leaseMs) break;
      const { marked } = await publishOne(row, batch, claimedAt);
      handed++;
      marks.push(marked);
      marked.catch(() => {
        markFailed = true;
      });
    }
    // Every mark sent is waited for, also when one failed: the batch ends with nothing of it still in flight.
    const failed = (await Promise.allSettled(marks)).find((outcome) => outcome.status === "rejected");
    const givingBack = giveBack(rows.slice(handed));
    if (failed) {
      // The batch failed already: a give-back failing with it is the same outage, not one more.
      await givingBack.catch(() => {});
      throw failed.reason;
    }
    await givingBack.catch((error: unknown) => report({ type: "error", error }));
    return batch;
  }

  /**
   * Hands claimed events that were never published back to every relay, uncharged. Should that fail too (the
   * database is away), they come back once their lease ends, with the claim counted as an attempt.
   */
  async function giveBack(rows: Row[]): Promise<void> {
    if (rows.length === 0) return;
    const ids = rows.map((row) => Number(row.id));
    const attempts = rows.map((row) => Number(row.attempts));
    await run(db, statements.GIVE_BACK, [ids, attempts, databaseNow()]);
  }

  let loop: Promise<void> | undefined;
  let stopping: AbortController | undefined;

  return {
    /** Publishes one batch of due events, and says what became of them. */
    runOnce,
    /** Publishes until `stop()`: batch after batch while events are due, pausing `idleMs` when none are. */
    start(): void {
      if (loop) return;
      const stop = new AbortController();
      stopping = stop;
      loop = (async () => {
        for (let failures = 0; !stop.signal.aborted; ) {
          let pauseMs = 0;
          try {
            const batch = await runOnce();
            failures = 0;
            if (batch.published + batch.failed + batch.dead === 0) pauseMs = idleMs;
          } catch {
            // The database is away (runOnce reported it): the relay outlives the outage, asking less often the
            // longer it lasts.
            pauseMs = Math.min(idleMs * 2 ** failures++, MAX_ERROR_PAUSE_MS);
          }
          if (pauseMs > 0) await pause(pauseMs, stop.signal);
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

/** The relay `createRelay` makes: `start()`, `stop()`, or `runOnce()` from your own scheduler. */
export type Relay = ReturnType<typeof createRelay>;

/**
 * Puts dead events (all of them, or those in `ids`) back to pending with fresh attempts: after the cause was
 * fixed. Returns the ids put back.
 */
export async function retryDeadEvents({
  db,
  ids,
  table = outboxEvents,
  now,
}: {
  db: AnyPgDatabase;
  ids?: number[];
  table?: OutboxEventsTable;
  now?: () => number;
}): Promise<number[]> {
  registerDatabase(db);
  const rows = await run(db, outboxStatements(qualifiedName(table)).RETRY_DEAD, [now?.() ?? null, ids ?? null]);
  return rows.map((row) => Number(row.id));
}

/** Deletes events published before `before` (ms since the epoch), in batches. Returns how many. */
export function purgePublishedEvents({
  db,
  before,
  table = outboxEvents,
  batchSize = 1_000,
}: PurgeOptions<OutboxEventsTable>): Promise<number> {
  return purgeInBatches(db, outboxStatements(qualifiedName(table)).PURGE, before, batchSize);
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
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
