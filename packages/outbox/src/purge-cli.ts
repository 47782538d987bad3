#!/usr/bin/env node
/**
 * Deletes published outbox events and processed-event records past their retention, in bounded batches, from the
 * database at DATABASE_URL. Meant for cron:
 *
 *   DATABASE_URL=postgres://… npx idemkit-outbox-purge [--published 7d] [--processed 14d] [--batch-size 1000]
 *
 * `--table` and `--processed-table` name tables other than `outbox_events` and `processed_events`. Exit codes as
 * every idemkit command's: 0 done, 1 the database failed, 2 a usage error.
 */
import { runPurgeCommand } from "@idemkit/drizzle/internal";
import { outboxEventsTable, processedEventsTable } from "./outbox-schema.js";
import { purgeProcessedEvents } from "./process-once.js";
import { purgePublishedEvents } from "./relay.js";

await runPurgeCommand({
  name: "idemkit-outbox-purge",
  usage: `usage: DATABASE_URL=postgres://… idemkit-outbox-purge [--published AGE] [--processed AGE] [options]

Deletes in batches, and prints how many it deleted. Run it from cron, e.g. daily.

  --published AGE          outbox events published more than AGE ago (pending and dead ones are kept)
  --processed AGE          processOnce records older than AGE: keep them longer than your broker or queue may
                           redeliver (its retention plus a margin; 14d is a safe default)
  --batch-size N           rows deleted at a time (default 1000)
  --table NAME             the outbox table (default outbox_events; schema.table for another schema)
  --processed-table NAME   processOnce's table (default processed_events; schema.table for another schema)
  --json                   one JSON document instead of lines

AGE is a number and a unit: 90s, 30m, 12h, 14d. Exit codes: 0 done, 1 the database failed, 2 a usage error.
Needs the "postgres" package (npm install postgres).`,
  tables: { table: "outbox_events", "processed-table": "processed_events" },
  ages: ["published", "processed"],
  async purge(db, { now, batchSize, ages, tables }) {
    const deleted: { publishedEvents?: number; processedEvents?: number } = {};
    const lines: string[] = [];
    const { published, processed } = ages;
    if (published) {
      const table = tables.table.of(outboxEventsTable);
      deleted.publishedEvents = await purgePublishedEvents({ db, table, before: now - published.ms, batchSize });
      lines.push(`deleted ${deleted.publishedEvents} published outbox event(s) older than ${published.text}`);
    }
    if (processed) {
      const table = tables["processed-table"].of(processedEventsTable);
      deleted.processedEvents = await purgeProcessedEvents({ db, table, before: now - processed.ms, batchSize });
      lines.push(`deleted ${deleted.processedEvents} processed-event record(s) older than ${processed.text}`);
    }
    return { document: deleted, lines };
  },
});
