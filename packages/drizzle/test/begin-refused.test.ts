/**
 * A pooler that refuses BEGIN: PgBouncer in statement mode refuses every transaction block (and ends the client's
 * connection). idemkit sends the claim behind BEGIN without waiting for BEGIN's answer (postgres.js 4, node-postgres);
 * the call fails, answered as the store being away, and the procedure never runs outside a transaction.
 */
import { createIdempotencyEngine } from "@idemkit/core";
import { createDatabase, MIGRATIONS_FOLDER, type RunningPgbouncer, startPgbouncer } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle as drizzleNodePostgres } from "drizzle-orm/node-postgres";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import pg from "pg";
import postgres3 from "postgres";
import postgres4 from "postgres4";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { drizzleStore } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: each driver's database has its own type
type AnyDb = any;

let database: Awaited<ReturnType<typeof createDatabase>>;
let bouncer: RunningPgbouncer;
beforeAll(async () => {
  database = await createDatabase(inject("postgresUrl"));
  const setup = postgres3(database.url, { max: 1, onnotice: () => {} });
  await migrate(drizzle(setup), { migrationsFolder: MIGRATIONS_FOLDER });
  await setup.unsafe("create table orders (id serial primary key, sku text not null)");
  await setup.end();
  bouncer = await startPgbouncer(inject("postgresUrl"), { poolMode: "statement" });
});
afterAll(async () => {
  await bouncer?.stop();
  await database?.drop();
});

describe.each([
  [
    "postgres.js 4",
    () => {
      const client = postgres4(bouncer.pooled(database.url), { max: 2, prepare: false, onnotice: () => {} });
      return { db: drizzle(client as never) as AnyDb, close: () => client.end({ timeout: 5 }) };
    },
  ],
  [
    "node-postgres",
    () => {
      const pool = new pg.Pool({ connectionString: bouncer.pooled(database.url), max: 2 });
      // As node-postgres asks of every app: an idle client the pooler closes is the pool's error, not the process's.
      pool.on("error", () => {});
      return { db: drizzleNodePostgres(pool) as AnyDb, close: () => pool.end() };
    },
  ],
] as const)("an atomic call on %s behind a pooler that refuses BEGIN", (_, open) => {
  it("fails without running the procedure", async () => {
    const { db, close } = open();
    try {
      const engine = createIdempotencyEngine({ store: drizzleStore({ db }) });
      let runs = 0;
      const outcome = await engine
        .run({ scope: "s", path: "orders.place", key: crypto.randomUUID(), fingerprint: "fp" }, async ({ tx }) => {
          runs++;
          await (tx as AnyDb).execute(sql`insert into orders (sku) values ('tea')`);
          return { value: "placed", response: { status: 200, body: '"placed"' } };
        })
        .then(
          () => "answered",
          (error: unknown) => String(error),
        );
      expect(runs).toBe(0);
      expect(outcome).not.toBe("answered");
      const direct = postgres3(database.url, { max: 1 });
      try {
        expect(await direct`select 1 from orders`).toEqual([]);
      } finally {
        await direct.end();
      }
    } finally {
      await close();
    }
  });
});
