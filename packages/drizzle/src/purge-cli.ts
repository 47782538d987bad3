#!/usr/bin/env node
/**
 * Deletes expired idempotency records in bounded batches, from the database at DATABASE_URL. Meant for cron:
 *
 *   DATABASE_URL=postgres://… npx idemkit-purge [--batch-size 1000] [--table NAME] [--json]
 *
 * Prints how many rows it deleted. Exit codes as every idemkit command's: 0 done, 1 the database failed, 2 a usage
 * error. The outbox's tables are purged by `idemkit-outbox-purge`, from @idemkit/outbox.
 */
import { runPurgeCommand } from "./purge-command.js";
import { idempotencyKeysTable } from "./schema.js";
import { drizzleStore } from "./store.js";

await runPurgeCommand({
  name: "idemkit-purge",
  usage: `usage: DATABASE_URL=postgres://… idemkit-purge [--batch-size N] [--table NAME] [--json]

Deletes idempotency records past their TTL, N at a time (default 1000), skipping rows that a running request
holds, and prints how many it deleted. Run it from cron, e.g. hourly.

  --table NAME    the records' table (default idempotency_keys; schema.table for another schema)
  --json          one JSON document instead of lines

Exit codes: 0 done, 1 the database failed, 2 a usage error. Needs the "postgres" package (npm install postgres).
The outbox's tables: idemkit-outbox-purge, from @idemkit/outbox.`,
  tables: { table: "idempotency_keys" },
  ages: [],
  moved: {
    outbox: { run: "idemkit-outbox-purge --published", from: "@idemkit/outbox" },
    processed: { run: "idemkit-outbox-purge --processed", from: "@idemkit/outbox" },
  },
  async purge(db, { now, batchSize, tables }) {
    const deleted = await drizzleStore({ db, table: tables.table.of(idempotencyKeysTable) }).purgeExpired({
      now,
      batchSize,
    });
    return { document: { deleted }, lines: [`deleted ${deleted} expired record(s)`] };
  },
});
