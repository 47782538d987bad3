/**
 * Which of idemkit's statements go prepared under their names is decided per database: a pooler in front of one
 * database (its prepared statements lost) or a postgres.js client with `prepare: false` sends that database's
 * statements unprepared, and every other database in the process keeps its names (and their lower cost). Read from
 * PostgreSQL's own list of a connection's prepared statements, on node-postgres pools of one connection.
 */
import { createIdempotencyEngine } from "@idemkit/core";
import { createDatabase, MIGRATIONS_FOLDER } from "@idemkit/testkit";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import pg from "pg";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { drizzleStore } from "../src/index.js";
import { named } from "../src/statement-text.js";
import { run } from "../src/statements.js";
import { claimFor } from "./claim-request.js";

let database: Awaited<ReturnType<typeof createDatabase>>;
const pools: pg.Pool[] = [];

beforeAll(async () => {
  database = await createDatabase(inject("postgresUrl"));
  await migrate(drizzle({ client: poolOfOne() }), { migrationsFolder: MIGRATIONS_FOLDER });
});
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await database?.drop();
});

function poolOfOne(): pg.Pool {
  const pool = new pg.Pool({ connectionString: database.url, max: 1 });
  pools.push(pool);
  return pool;
}

/** The names of idemkit's statements prepared on the pool's one connection. */
async function preparedNames(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    "select name from pg_prepared_statements where name like 'idemkit%' order by name",
  );
  return rows.map((row) => row.name);
}

describe("statement names, per database", () => {
  it("a database whose prepared statement was lost sends its statements unprepared; another keeps its names", async () => {
    const [lost, kept] = [poolOfOne(), poolOfOne()];
    const lostStore = drizzleStore({ db: drizzle({ client: lost }) });
    const keptStore = drizzleStore({ db: drizzle({ client: kept }) });
    expect((await lostStore.claim(claimFor(crypto.randomUUID()))).status).toBe("claimed");
    expect(await preparedNames(lost)).toEqual([expect.stringMatching(/^idemkit_claim_/)]);
    // What a transaction pooler does to a client's statements, here by hand on the one connection.
    await lost.query("deallocate all");

    // The lost statement is sent again, unprepared, and the call goes through; nothing is prepared there any more.
    expect((await lostStore.claim(claimFor(crypto.randomUUID()))).status).toBe("claimed");
    expect(await lostStore.get(claimFor("absent").id)).toBeUndefined();
    expect(await preparedNames(lost)).toEqual([]);

    // The other database in the same process still prepares each of its statements once, under its name.
    expect((await keptStore.claim(claimFor(crypto.randomUUID()))).status).toBe("claimed");
    expect(await keptStore.get(claimFor("absent").id)).toBeUndefined();
    expect(await preparedNames(kept)).toEqual([
      expect.stringMatching(/^idemkit_claim_/),
      expect.stringMatching(/^idemkit_get_/),
    ]);
  });

  it("a prepared statement lost inside an atomic transaction sends that database's statements unprepared", async () => {
    const pool = poolOfOne();
    const engine = createIdempotencyEngine({ store: drizzleStore({ db: drizzle({ client: pool }) }) });
    const call = (key: string) =>
      engine.run({ scope: "s", path: "notes.add", key, fingerprint: "fp" }, async () => ({
        value: key,
        response: { status: 200, body: JSON.stringify(key) },
      }));
    await call(crypto.randomUUID());
    expect(await preparedNames(pool)).toContainEqual(expect.stringMatching(/^idemkit_claim_/));
    await pool.query("deallocate all");
    // The claim met its statement missing before any work ran: the transaction is begun again, unnamed.
    for (let n = 0; n < 3; n++) await call(crypto.randomUUID());
    expect(await preparedNames(pool)).toEqual([]);
  });

  it("every Drizzle instance over one pool learns from a name lost through any of them", async () => {
    const pool = poolOfOne();
    const first = drizzleStore({ db: drizzle({ client: pool }) });
    await first.claim(claimFor(crypto.randomUUID()));
    await pool.query("deallocate all");
    await first.claim(claimFor(crypto.randomUUID()));
    // A database made per request over the same pool: its statements go unnamed at once, never lost again.
    for (let n = 0; n < 3; n++) {
      expect((await drizzleStore({ db: drizzle({ client: pool }) }).claim(claimFor(crypto.randomUUID()))).status).toBe(
        "claimed",
      );
    }
    expect(await preparedNames(pool)).toEqual([]);
  });

  it("a transaction of a database idemkit never saw sends its statements unnamed, which no pooler loses", async () => {
    const pool = poolOfOne();
    const ping = named({ PING: { name: "idemkit_ping", text: "select $1::int as n", columns: ["n"] } }).PING;
    const inTransaction = () => drizzle({ client: pool }).transaction((tx) => run(tx, ping, [1]));
    expect(await inTransaction()).toEqual([{ n: 1 }]);
    expect(await preparedNames(pool)).toEqual([]);
    // Once a store knows the database, its transactions name their statements.
    const seen = poolOfOne();
    const db = drizzle({ client: seen });
    drizzleStore({ db });
    expect(await db.transaction((tx) => run(tx, ping, [2]))).toEqual([{ n: 2 }]);
    expect(await preparedNames(seen)).toEqual([expect.stringMatching(/^idemkit_ping_/)]);
  });

  it("a postgres.js client with prepare: false leaves a node-postgres database's statements named", async () => {
    const client = postgres(database.url, { max: 1, prepare: false, onnotice: () => {} });
    try {
      const unpreparedStore = drizzleStore({ db: drizzlePostgres({ client }) });
      expect((await unpreparedStore.claim(claimFor(crypto.randomUUID()))).status).toBe("claimed");
      const named = poolOfOne();
      expect((await drizzleStore({ db: drizzle({ client: named }) }).claim(claimFor(crypto.randomUUID()))).status).toBe(
        "claimed",
      );
      expect(await preparedNames(named)).toEqual([expect.stringMatching(/^idemkit_claim_/)]);
    } finally {
      await client.end({ timeout: 5 });
    }
  });
});
