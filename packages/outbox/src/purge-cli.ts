#!/usr/bin/env node
/**
 * Deletes published outbox events and processed-event records past their retention, in bounded batches, from the
 * database at DATABASE_URL. Meant for cron:
 *
 *   DATABASE_URL=postgres://… npx idemkit-outbox-purge [--published 7d] [--processed 14d] [--batch-size 1000]
 */
import { runPurgeCommand } from "@idemkit/drizzle/internal";
import { purgeProcessedEvents } from "./process-once.js";
import { purgePublishedEvents } from "./relay.js";

await runPurgeCommand({
  name: "idemkit-outbox-purge",
  usage: `usage: DATABASE_URL=postgres://… idemkit-outbox-purge [--published AGE] [--processed AGE] [--batch-size N]

Deletes, N rows at a time (default 1000), and prints how many it deleted. Run it from cron, e.g. daily. Needs the
"postgres" package (npm install postgres).

  --published AGE   outbox events published more than AGE ago (pending and dead ones are kept)
  --processed AGE   processOnce records older than AGE: keep them longer than your broker or queue may
                    redeliver (its retention plus a margin; 14d is a safe default)

AGE is a number and a unit: 90s, 30m, 12h, 14d.`,
  ages: ["published", "processed"],
  async purge(db, { now, batchSize, ages }) {
    const lines: string[] = [];
    const { published, processed } = ages;
    if (published) {
      const events = await purgePublishedEvents({ db, before: now - published.ms, batchSize });
      lines.push(`deleted ${events} published outbox event(s) older than ${published.text}`);
    }
    if (processed) {
      const records = await purgeProcessedEvents({ db, before: now - processed.ms, batchSize });
      lines.push(`deleted ${records} processed-event record(s) older than ${processed.text}`);
    }
    return lines;
  },
});
