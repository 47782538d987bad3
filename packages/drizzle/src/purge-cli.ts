#!/usr/bin/env node
/**
 * Deletes expired idempotency records in bounded batches, from the database at DATABASE_URL. Meant for cron:
 *
 *   DATABASE_URL=postgres://… npx idemkit-purge [--batch-size 1000]
 *
 * Prints how many rows it deleted. The outbox's tables are purged by `idemkit-outbox-purge`, from @idemkit/outbox.
 */
import { runPurgeCommand } from "./purge-command.js";
import { drizzleStore } from "./store.js";

await runPurgeCommand({
  name: "idemkit-purge",
  usage: `usage: DATABASE_URL=postgres://… idemkit-purge [--batch-size N]

Deletes idempotency records past their TTL, N at a time (default 1000), skipping rows that a running request
holds, and prints how many it deleted. Run it from cron, e.g. hourly. Needs the "postgres" package
(npm install postgres). The outbox's tables: idemkit-outbox-purge, from @idemkit/outbox.`,
  ages: [],
  moved: {
    outbox: { run: "idemkit-outbox-purge --published", from: "@idemkit/outbox" },
    processed: { run: "idemkit-outbox-purge --processed", from: "@idemkit/outbox" },
  },
  async purge(db, { now, batchSize }) {
    const deleted = await drizzleStore({ db }).purgeExpired({ now, batchSize });
    return [`deleted ${deleted} expired record(s)`];
  },
});
