/**
 * What protection costs in round trips, counted exactly: each database reached through a proxy that counts a
 * client's flights (what it sends before an answer reaches it), with a round trip of a few ms so that one moment's
 * writes are never split by an answer. One connection each, warmed up, so that every statement is prepared already.
 * The timings are `npm run bench:latency`'s; here only the counts, which are the contract: on postgres.js 4 and
 * node-postgres (on a client in pipeline mode), an atomic first execution sends its claim in BEGIN's flight and its
 * completion in COMMIT's, so it costs what the same transaction costs unprotected; on postgres.js 3, one more.
 */
import { createIdempotencyEngine } from "@idemkit/core";
import { guardedConnections } from "@idemkit/postgres-js-guard";
import { createDatabase, type LatencyProxy, MIGRATIONS_FOLDER, startLatencyProxy } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle as drizzleNodePostgres } from "drizzle-orm/node-postgres";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import pg from "pg";
import postgres3 from "postgres";
import postgres4 from "postgres4";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { drizzleStore } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: each major's client and database have their own types
type AnyDb = any;

let database: Awaited<ReturnType<typeof createDatabase>>;
let proxy: LatencyProxy;
beforeAll(async () => {
  database = await createDatabase(inject("postgresUrl"));
  const url = new URL(database.url);
  proxy = await startLatencyProxy({ host: url.hostname, port: Number(url.port) }, 4);
  const setup = postgres3(database.url, { max: 1, onnotice: () => {} });
  await migrate(drizzle(setup), { migrationsFolder: MIGRATIONS_FOLDER });
  await setup.unsafe("create table orders (id serial primary key, sku text not null)");
  await setup.end();
});
afterAll(async () => {
  await proxy?.close();
  await database?.drop();
});

const placeOrder = (tx: AnyDb) => tx.execute(sql`insert into orders (sku) values ('tea')`);

/** The flights `call` sends, once it ran twice before to prepare its statements on the connection. */
async function flightsOf(call: () => Promise<unknown>): Promise<number> {
  await call();
  await call();
  const before = proxy.flights();
  await call();
  return proxy.flights() - before;
}

/** The flights of the order's transaction unprotected, and of an atomic first execution of it answering `body`. */
async function unprotectedAndAtomic(db: AnyDb, body = '"placed"'): Promise<{ unprotected: number; atomic: number }> {
  const engine = createIdempotencyEngine({ store: drizzleStore({ db }) });
  return {
    unprotected: await flightsOf(() => db.transaction(placeOrder)),
    atomic: await flightsOf(() =>
      engine.run(
        { scope: "s", path: "orders.place", key: crypto.randomUUID(), fingerprint: "fp" },
        async ({ tx }: { tx: AnyDb }) => {
          await placeOrder(tx);
          return { value: "placed", response: { status: 200, body } };
        },
      ),
    ),
  };
}

describe("round trips", () => {
  it("on postgres.js 4: an atomic first execution costs what the transaction costs unprotected", async () => {
    const client = postgres4(proxy.urlFor(database.url), { max: 1, onnotice: () => {} });
    try {
      // BEGIN, the insert, COMMIT; protected, the claim leaves with BEGIN and the completion with COMMIT.
      expect(await unprotectedAndAtomic(drizzle(client as never))).toEqual({ unprotected: 3, atomic: 3 });
    } finally {
      await client.end({ timeout: 5 });
    }
  });

  it("on postgres.js 4 with prepare: false: the same, the claim's savepoint in its text", async () => {
    const client = postgres4(proxy.urlFor(database.url), { max: 1, prepare: false, onnotice: () => {} });
    try {
      expect(await unprotectedAndAtomic(drizzle(client as never))).toEqual({ unprotected: 3, atomic: 3 });
    } finally {
      await client.end({ timeout: 5 });
    }
  });

  it("on postgres.js 3 with its defaults: one round trip more (its sql.begin awaits BEGIN)", async () => {
    const client = postgres3(proxy.urlFor(database.url), { max: 1, onnotice: () => {} });
    try {
      // Its prepared COMMIT, lost (an app's own DISCARD ALL), is reported done: the completion, in the COMMIT's
      // flight, says whether the session holds it, so a record is read back only where it did not. A connection not
      // proved to reach PostgreSQL itself (a proxy on a port of its own) reads back every time.
      const readBack = proxy.transparent ? 0 : 1;
      expect(await unprotectedAndAtomic(drizzle(client))).toEqual({ unprotected: 3, atomic: 4 + readBack });
    } finally {
      await client.end({ timeout: 5 });
    }
  });

  it("on postgres.js 3 with prepare: false (what a transaction pooler needs): one round trip more, as with its defaults", async () => {
    // Its statements then carry their values as literals, and the claim is larger than what postgres.js 3 buffers
    // (1,024 bytes): written at once, so that a savepoint sent behind it would wait for its answer (Nagle's
    // algorithm). The savepoint goes in the claim's text instead.
    const client = postgres3(proxy.urlFor(database.url), { max: 1, prepare: false, onnotice: () => {} });
    try {
      expect(await unprotectedAndAtomic(drizzle(client))).toEqual({ unprotected: 3, atomic: 4 });
    } finally {
      await client.end({ timeout: 5 });
    }
  });

  it("on node-postgres: an atomic first execution costs what the transaction costs unprotected", async () => {
    const pool = new pg.Pool({ connectionString: proxy.urlFor(database.url), max: 1 });
    try {
      // The claim and its savepoint in BEGIN's flight, the completion in COMMIT's, on a client in pipeline mode.
      expect(await unprotectedAndAtomic(drizzleNodePostgres(pool))).toEqual({ unprotected: 3, atomic: 3 });
    } finally {
      await pool.end();
    }
  });

  describe("answering 2 kB, so that the completion is written at once, ahead of the COMMIT behind it", () => {
    const body = JSON.stringify("x".repeat(2_000));

    it("costs the same on postgres.js 4 and node-postgres", async () => {
      const four = postgres4(proxy.urlFor(database.url), { max: 1, onnotice: () => {} });
      const pool = new pg.Pool({ connectionString: proxy.urlFor(database.url), max: 1 });
      try {
        expect(await unprotectedAndAtomic(drizzle(four as never), body)).toEqual({ unprotected: 3, atomic: 3 });
        expect(await unprotectedAndAtomic(drizzleNodePostgres(pool), body)).toEqual({ unprotected: 3, atomic: 3 });
      } finally {
        await Promise.all([four.end({ timeout: 5 }), pool.end()]);
      }
    });

    it("costs one more on postgres.js 3 (its socket keeps Nagle's algorithm), and not through guardedConnections", async () => {
      const url = proxy.urlFor(database.url);
      const plain = postgres3(url, { max: 1, onnotice: () => {} });
      const guarded = postgres3(url, guardedConnections({ max: 1, onnotice: () => {} }));
      try {
        // The COMMIT waits for the completion's ACK, which comes with its answer: a round trip.
        const readBack = proxy.transparent ? 0 : 1;
        expect(await unprotectedAndAtomic(drizzle(plain), body)).toEqual({ unprotected: 3, atomic: 5 + readBack });
        expect(await unprotectedAndAtomic(drizzle(guarded), body)).toEqual({ unprotected: 3, atomic: 4 + readBack });
      } finally {
        await Promise.all([plain.end({ timeout: 5 }), guarded.end({ timeout: 5 })]);
      }
    });
  });
});
