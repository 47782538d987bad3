/**
 * Opening the demo's database as instances start: several at once on an empty PostgreSQL database must all end up
 * migrated and serving (the losers of the race migrate again and find the work done), not fail on each other's
 * half-made tables; directly, and through a transaction pooler.
 */
import { createDatabase, type RunningPgbouncer, startPgbouncer } from "@idemkit/testkit";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { type OpenDatabase, openDatabase } from "../src/server/database";

let database: { url: string; drop(): Promise<void> };
let pooledDatabase: { url: string; drop(): Promise<void> };
let bouncer: RunningPgbouncer;
beforeAll(async () => {
  database = await createDatabase(inject("postgresUrl"));
  pooledDatabase = await createDatabase(inject("postgresUrl"));
  bouncer = await startPgbouncer(inject("postgresUrl"), { poolSize: 2 });
});
afterAll(async () => {
  await bouncer?.stop();
  await Promise.all([database?.drop(), pooledDatabase?.drop()]);
});

it.each([
  ["directly", () => database.url],
  ["through PgBouncer in transaction mode, with no direct URL", () => bouncer.pooled(pooledDatabase.url)],
])("migrates an empty database once when three instances open it at the same time, %s", async (_, urlOf) => {
  const url = urlOf();
  const opened = await Promise.allSettled(Array.from({ length: 3 }, () => openDatabase({ url, max: 2 })));
  const instances = opened.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
  try {
    expect(opened.map((outcome) => outcome.status)).toEqual(["fulfilled", "fulfilled", "fulfilled"]);
    for (const instance of instances) await expect(tablesOf(instance)).resolves.toContain("orders");
  } finally {
    await Promise.all(instances.map((instance) => instance.close()));
  }
});

async function tablesOf({ db }: OpenDatabase): Promise<string[]> {
  const result = await db.execute<{ table_name: string }>(
    "select table_name from information_schema.tables where table_schema = 'public'" as never,
  );
  const rows = (Array.isArray(result) ? result : (result as { rows: Array<{ table_name: string }> }).rows) ?? [];
  return rows.map((row) => row.table_name);
}
