import { describeAtomicConformance, describeStoreConformance } from "@idemkit/core/testing";
import { openNodePostgres, openPglite, openPostgres } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { afterAll, beforeAll, inject } from "vitest";
import { drizzleStore } from "../src/index.js";

let pglite: Awaited<ReturnType<typeof openPglite>>;
let server: Awaited<ReturnType<typeof openPostgres>>;
let nodePostgres: Awaited<ReturnType<typeof openNodePostgres>>;

beforeAll(async () => {
  [pglite, server, nodePostgres] = await Promise.all([
    openPglite(),
    openPostgres(inject("postgresUrl")),
    openNodePostgres(inject("postgresUrl")),
  ]);
  for (const database of [pglite, server, nodePostgres]) {
    await database.query("create table atomic_notes (marker text not null)");
  }
});
afterAll(async () => {
  await Promise.all([pglite?.close(), server?.close(), nodePostgres?.close()]);
});

describeStoreConformance("drizzleStore on PGlite", async () => ({ store: drizzleStore({ db: pglite.db }) }));
describeStoreConformance("drizzleStore on PostgreSQL (postgres.js)", async () => ({
  store: drizzleStore({ db: server.db }),
}));
describeStoreConformance("drizzleStore on PostgreSQL (node-postgres)", async () => ({
  store: drizzleStore({ db: nodePostgres.db }),
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

/** The database once beforeAll opened it: the suites are registered before it runs. */
function lazy(database: () => { db: AnyDb; query(text: string, params: unknown[]): Promise<unknown[]> }) {
  return {
    get db() {
      return database().db;
    },
    query: (text: string, params: unknown[]) => database().query(text, params),
  };
}
