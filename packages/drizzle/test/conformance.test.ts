import { describeAtomicConformance, describeStoreConformance } from "@idemkit/core/testing";
import { createDatabase, MIGRATIONS_FOLDER, openNodePostgres, openPglite, openPostgres } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { pgSchema } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { afterAll, beforeAll, inject } from "vitest";
import { drizzleStore, idempotencyKeysTable } from "../src/index.js";
import { guardedConnections } from "../src/postgres-js.js";

let pglite: Awaited<ReturnType<typeof openPglite>>;
let server: Awaited<ReturnType<typeof openPostgres>>;
let nodePostgres: Awaited<ReturnType<typeof openNodePostgres>>;
/** A database of its own for the renamed table, so that its default table must stay empty. */
let elsewhereDatabase: Awaited<ReturnType<typeof openPostgres>>;
/** postgres.js through guardedConnections: the guard must change nothing while connections live. */
let guarded: {
  db: ReturnType<typeof drizzle>;
  query(text: string, params?: unknown[]): Promise<unknown[]>;
  close(): Promise<void>;
};

async function openGuarded(serverUrl: string): Promise<typeof guarded> {
  const database = await createDatabase(serverUrl);
  const client = postgres(database.url, guardedConnections({ max: 10, onnotice: () => {} }));
  const db = drizzle(client);
  await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
  return {
    db,
    query: async (text, params = []) => client.unsafe(text, params as never[]),
    async close() {
      await client.end({ timeout: 5 });
      await database.drop();
    },
  };
}

beforeAll(async () => {
  [pglite, server, nodePostgres, guarded] = await Promise.all([
    openPglite(),
    openPostgres(inject("postgresUrl")),
    openNodePostgres(inject("postgresUrl")),
    openGuarded(inject("postgresUrl")),
  ]);
  for (const database of [pglite, server, nodePostgres, guarded]) {
    await database.query("create table atomic_notes (marker text not null)");
  }
  elsewhereDatabase = await openPostgres(inject("postgresUrl"));
  await elsewhereDatabase.query("create schema idemkit_elsewhere");
  await elsewhereDatabase.query(
    "create table idemkit_elsewhere.app_idempotency_keys (like public.idempotency_keys including all)",
  );
});
afterAll(async () => {
  await Promise.all([
    pglite?.close(),
    server?.close(),
    nodePostgres?.close(),
    guarded?.close(),
    elsewhereDatabase?.close(),
  ]);
});

describeStoreConformance("drizzleStore on PGlite", async () => ({ store: drizzleStore({ db: pglite.db }) }));
describeStoreConformance("drizzleStore on PostgreSQL (postgres.js)", async () => ({
  store: drizzleStore({ db: server.db }),
}));
describeStoreConformance("drizzleStore on PostgreSQL (node-postgres)", async () => ({
  store: drizzleStore({ db: nodePostgres.db }),
}));
describeStoreConformance("drizzleStore on PostgreSQL (postgres.js through guardedConnections)", async () => ({
  store: drizzleStore({ db: guarded.db }),
}));

// A table under another name, in a schema of its own (a prefix that drizzle-kit's tablesFilter expects, say).
const elsewhere = idempotencyKeysTable("app_idempotency_keys", pgSchema("idemkit_elsewhere"));
describeStoreConformance("drizzleStore on a renamed table in its own schema", async () => ({
  store: drizzleStore({ db: elsewhereDatabase.db, table: elsewhere }),
  async cleanup() {
    // Nothing of it may have reached the default table.
    const [row] = await elsewhereDatabase.query<{ n: number }>(
      "select count(*)::int as n from public.idempotency_keys",
    );
    if (row?.n) throw new Error(`${row.n} record(s) landed in public.idempotency_keys`);
  },
}));

// biome-ignore lint/suspicious/noExplicitAny: the suite runs over each driver's own database type
type AnyDb = PgDatabase<PgQueryResultHKT, any, any>;

/** The atomic suite over one driver: business rows are notes tagged with the test's marker. */
function atomicSubject(database: { db: AnyDb; query(text: string, params: unknown[]): Promise<unknown[]> }) {
  return async () => ({
    store: drizzleStore({ db: database.db }),
    storeWithWait: (waitMs: number) => drizzleStore({ db: database.db, waitMs }),
    write: (tx: AnyDb, marker: string) => tx.execute(sql`insert into atomic_notes (marker) values (${marker})`),
    count: async (marker: string) =>
      (await database.query("select 1 from atomic_notes where marker = $1", [marker])).length,
    // PostgreSQL keeps a status in an integer column: one beyond 32 bits cannot be stored.
    unstorableResponse: { status: 2 ** 40, body: "{}" },
  });
}

describeAtomicConformance("drizzleStore on PGlite", atomicSubject(lazy(() => pglite)), { oneConnection: true });
describeAtomicConformance("drizzleStore on PostgreSQL (postgres.js)", atomicSubject(lazy(() => server)));
describeAtomicConformance("drizzleStore on PostgreSQL (node-postgres)", atomicSubject(lazy(() => nodePostgres)));
describeAtomicConformance(
  "drizzleStore on PostgreSQL (postgres.js through guardedConnections)",
  atomicSubject(lazy(() => guarded)),
);

/** The database once beforeAll opened it: the suites are registered before it runs. */
function lazy(database: () => { db: AnyDb; query(text: string, params: unknown[]): Promise<unknown[]> }) {
  return {
    get db() {
      return database().db;
    },
    query: (text: string, params: unknown[]) => database().query(text, params),
  };
}
