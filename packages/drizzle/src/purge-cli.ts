#!/usr/bin/env node
/**
 * Deletes expired idempotency records, in bounded batches, from the database at DATABASE_URL. Meant for cron:
 *
 *   DATABASE_URL=postgres://… npx idemkit-purge [--batch-size 1000]
 *
 * Prints how many records it deleted. It connects with postgres.js, an optional peer of this package: it is
 * loaded only once a database is needed, so `--help` works without it.
 */
import { parseArgs } from "node:util";
import { drizzleStore } from "./store.js";

const USAGE = `usage: DATABASE_URL=postgres://… idemkit-purge [--batch-size N]

Deletes idempotency records past their TTL, N at a time (default 1000), skipping rows that a running request
holds, and prints how many it deleted. Run it from cron, e.g. hourly. Needs the "postgres" package
(npm install postgres).`;

const { values } = parseArgs({
  options: { "batch-size": { type: "string", default: "1000" }, help: { type: "boolean", short: "h" } },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const batchSize = Number(values["batch-size"]);
const url = process.env.DATABASE_URL;
if (!url || !Number.isInteger(batchSize) || batchSize < 1) {
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
  const deleted = await drizzleStore({ db: drizzle(client) }).purgeExpired({ now: Date.now(), batchSize });
  console.log(`idemkit-purge: deleted ${deleted} expired record(s)`);
} finally {
  await client.end();
}
