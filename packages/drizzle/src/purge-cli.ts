#!/usr/bin/env node
/**
 * Deletes expired idempotency records, in bounded batches, from the database at DATABASE_URL. Meant for cron:
 *
 *   DATABASE_URL=postgres://… npx idemkit-purge [--batch-size 1000]
 *
 * Prints how many records it deleted. Needs the `postgres` package (postgres.js) installed beside it.
 */
import { parseArgs } from "node:util";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { drizzleStore } from "./store.js";

const { values } = parseArgs({ options: { "batch-size": { type: "string", default: "1000" } } });
const batchSize = Number(values["batch-size"]);
const url = process.env.DATABASE_URL;
if (!url || !Number.isInteger(batchSize) || batchSize < 1) {
  console.error("usage: DATABASE_URL=postgres://… idemkit-purge [--batch-size N]");
  process.exit(2);
}
const client = postgres(url, { max: 1 });
try {
  const deleted = await drizzleStore({ db: drizzle(client) }).purgeExpired({ now: Date.now(), batchSize });
  console.log(`idemkit-purge: deleted ${deleted} expired record(s)`);
} finally {
  await client.end();
}
