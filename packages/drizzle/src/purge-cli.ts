#!/usr/bin/env node
/**
 * Deletes expired idempotency records, and on request published outbox events and processed-event records past
 * their retention, in bounded batches, from the database at DATABASE_URL. Meant for cron:
 *
 *   DATABASE_URL=postgres://… npx idemkit-purge [--batch-size 1000] [--outbox 7d] [--processed 14d]
 *
 * Prints how many rows it deleted. It connects with postgres.js, an optional peer of this package: it is loaded
 * only once a database is needed, so `--help` works without it.
 */
import { parseArgs } from "node:util";
import { purgeProcessedEvents } from "./process-once.js";
import { purgePublishedEvents } from "./relay.js";
import { drizzleStore } from "./store.js";

const USAGE = `usage: DATABASE_URL=postgres://… idemkit-purge [--batch-size N] [--outbox AGE] [--processed AGE]

Deletes idempotency records past their TTL, N at a time (default 1000), skipping rows that a running request
holds, and prints how many it deleted. Run it from cron, e.g. hourly. Needs the "postgres" package
(npm install postgres).

  --outbox AGE      also delete outbox events published more than AGE ago (pending and dead ones are kept)
  --processed AGE   also delete processOnce records older than AGE: keep them longer than your broker or
                    queue may redeliver (its retention plus a margin; 14d is a safe default)

AGE is a number and a unit: 90s, 30m, 12h, 14d.`;

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** An AGE option in ms; undefined when not given; NaN when malformed. */
function ageMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+)([smhd])$/.exec(value);
  return match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : Number.NaN;
}

const { values } = parseArgs({
  options: {
    "batch-size": { type: "string", default: "1000" },
    outbox: { type: "string" },
    processed: { type: "string" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const batchSize = Number(values["batch-size"]);
const outboxAge = ageMs(values.outbox);
const processedAge = ageMs(values.processed);
const url = process.env.DATABASE_URL;
if (
  !url ||
  !Number.isInteger(batchSize) ||
  batchSize < 1 ||
  Number.isNaN(outboxAge ?? 0) ||
  Number.isNaN(processedAge ?? 0)
) {
  console.error(USAGE);
  process.exit(2);
}
const [{ default: postgres }, { drizzle }] = await Promise.all([
  import("postgres"),
  import("drizzle-orm/postgres-js"),
]).catch((cause: unknown) => {
  console.error(
    `idemkit-purge connects with postgres.js, which is not installed here: run \`npm install postgres\`.\n(${cause})`,
  );
  process.exit(2);
});
const client = postgres(url, { max: 1 });
try {
  // The object form, which every supported drizzle-orm takes: 1.0 reads a client passed first as connection
  // options, and would connect from the PG* variables instead.
  const db = drizzle({ client });
  const now = Date.now();
  const deleted = await drizzleStore({ db }).purgeExpired({ now, batchSize });
  console.log(`idemkit-purge: deleted ${deleted} expired record(s)`);
  if (outboxAge !== undefined) {
    const events = await purgePublishedEvents({ db, before: now - outboxAge, batchSize });
    console.log(`idemkit-purge: deleted ${events} published outbox event(s) older than ${values.outbox}`);
  }
  if (processedAge !== undefined) {
    const records = await purgeProcessedEvents({ db, before: now - processedAge, batchSize });
    console.log(`idemkit-purge: deleted ${records} processed-event record(s) older than ${values.processed}`);
  }
} finally {
  await client.end();
}
