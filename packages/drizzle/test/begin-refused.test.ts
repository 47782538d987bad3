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

describe("an atomic call on node-postgres whose client the app gave back inside a failed transaction", () => {
  it("fails without running the procedure, and the pool's next call is served on a client of its own", async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    pool.on("error", () => {});
    try {
      // An app's bug: a transaction that failed, its client released without ROLLBACK. Its BEGIN now fails (25P02),
      // and so does everything sent behind it, on a connection that stays open.
      const leaky = await pool.connect();
      const backendOf = async (client: { query(text: string): Promise<{ rows: Array<{ pid: number }> }> }) =>
        (await client.query("select pg_backend_pid() as pid")).rows[0]?.pid;
      const leakyBackend = await backendOf(leaky);
      await leaky.query("begin");
      await leaky.query("select 1 / 0").catch(() => {});
      leaky.release();
      const engine = createIdempotencyEngine({ store: drizzleStore({ db: drizzleNodePostgres(pool) }) });
      let runs = 0;
      const work = async ({ tx }: { tx: unknown }) => {
        runs++;
        await (tx as AnyDb).execute(sql`insert into orders (sku) values ('tea')`);
        return { value: "placed", response: { status: 200, body: '"placed"' } };
      };
      const request = () => ({ scope: "s", path: "orders.place", key: crypto.randomUUID(), fingerprint: "fp" });
      await expect(engine.run(request(), work)).rejects.toThrow();
      expect(runs).toBe(0);
      // That client was ended, not given back to be lent again in a state no one should inherit.
      expect(await backendOf(pool)).not.toBe(leakyBackend);
      expect(await engine.run(request(), work)).toEqual({ replayed: false, value: "placed" });
      expect(runs).toBe(1);
      expect((await pool.query("select count(*)::int as n from orders")).rows).toEqual([{ n: 1 }]);
    } finally {
      await pool.end();
    }
  });
});
