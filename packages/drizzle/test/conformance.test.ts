import { encryptedStore } from "@idemkit/core";
import { describeAtomicConformance, describeStoreConformance } from "@idemkit/core/testing";
import { guardedConnections } from "@idemkit/postgres-js-guard";
import { createDatabase, MIGRATIONS_FOLDER, openNodePostgres, openPglite, openPostgres } from "@idemkit/testkit";
import { getTableName, sql, type Table } from "drizzle-orm";
import { Cache, type MutationOption } from "drizzle-orm/cache/core";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { pgSchema, withReplicas } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import postgres4 from "postgres4";
import { afterAll, beforeAll, inject } from "vitest";
import { drizzleStore, idempotencyKeysTable } from "../src/index.js";

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
/** postgres.js behind a query cache and read replicas. */
let cachedWithReplica: typeof guarded;
let unprepared3: typeof guarded;
let unprepared4: typeof guarded;

/**
 * A query cache as Drizzle's Upstash cache with `global: true` has it: every select cached, dropped when a write names
 * one of its tables. A statement of idemkit's served from it would be a record as it once was.
 */
class EverythingCache extends Cache {
  readonly entries = new Map<string, { response: unknown; tables: string[] }>();
  override strategy() {
    return "all" as const;
  }
  override async get(key: string) {
    return this.entries.get(key)?.response as unknown[] | undefined;
  }
  override async put(key: string, response: unknown, tables: string[]) {
    this.entries.set(key, { response, tables });
  }
  override async onMutate({ tables = [] }: MutationOption) {
    const names = new Set(
      [tables].flat().map((table: string | Table) => (typeof table === "string" ? table : getTableName(table))),
    );
    for (const [key, entry] of this.entries)
      if (entry.tables.some((table) => names.has(table))) this.entries.delete(key);
  }
}

/**
 * An app's database as Drizzle lets it be made: a query cache on every select, and selects sent to a read replica
 * (here a read-only connection to the same database, where a write fails), the primary kept for writes.
 */
async function openCachedWithReplica(serverUrl: string): Promise<typeof guarded> {
  const database = await createDatabase(serverUrl);
  const client = postgres(database.url, { max: 10, onnotice: () => {} });
  const replica = postgres(database.url, {
    max: 2,
    onnotice: () => {},
    connection: { default_transaction_read_only: true },
  });
  await migrate(drizzle({ client }), { migrationsFolder: MIGRATIONS_FOLDER });
  const db = withReplicas(drizzle(client, { cache: new EverythingCache() }), [drizzle(replica)]);
  return {
    db: db as unknown as ReturnType<typeof drizzle>,
    query: async (text, params = []) => client.unsafe(text, params as never[]),
    async close() {
      await Promise.all([client.end({ timeout: 5 }), replica.end({ timeout: 5 })]);
      await database.drop();
    },
  };
}

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

/**
 * postgres.js with `prepare: false` (what a transaction pooler needs), 3 or 4: idemkit's statements carry their values
 * as literals, and the claim its savepoint in its own text.
 */
async function openUnprepared(serverUrl: string, major: 3 | 4): Promise<typeof guarded> {
  const database = await createDatabase(serverUrl);
  const options = { max: 10, prepare: false, onnotice: () => {} };
  const client = major === 3 ? postgres(database.url, options) : postgres4(database.url, options);
  const db = drizzle(client as never);
  await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
  return {
    db,
    query: async (text, params = []) => (await client.unsafe(text, params as never[])) as unknown as unknown[],
    async close() {
      await client.end({ timeout: 5 });
      await database.drop();
    },
  };
}

beforeAll(async () => {
  [pglite, server, nodePostgres, guarded, cachedWithReplica, unprepared3, unprepared4] = await Promise.all([
    openPglite(),
    openPostgres(inject("postgresUrl")),
    openNodePostgres(inject("postgresUrl")),
    openGuarded(inject("postgresUrl")),
    openCachedWithReplica(inject("postgresUrl")),
    openUnprepared(inject("postgresUrl"), 3),
    openUnprepared(inject("postgresUrl"), 4),
  ]);
  for (const database of [pglite, server, nodePostgres, guarded, cachedWithReplica, unprepared3, unprepared4]) {
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
    cachedWithReplica?.close(),
    unprepared3?.close(),
    unprepared4?.close(),
    elsewhereDatabase?.close(),
  ]);
});

describeStoreConformance("drizzleStore on PGlite", async () => ({ store: drizzleStore({ db: pglite.db }) }));
// Answers sealed at rest change nothing else of the contract.
const ANSWER_KEYS = { current: "k1", keys: { k1: new Uint8Array(32).fill(7) } };
describeStoreConformance("encryptedStore over drizzleStore on PGlite", async () => ({
  store: encryptedStore(drizzleStore({ db: pglite.db }), ANSWER_KEYS),
}));
describeStoreConformance("encryptedStore over drizzleStore on PostgreSQL (postgres.js)", async () => ({
  store: encryptedStore(drizzleStore({ db: server.db }), ANSWER_KEYS),
}));
describeStoreConformance("drizzleStore on PostgreSQL (postgres.js)", async () => ({
  store: drizzleStore({ db: server.db }),
}));
describeStoreConformance("drizzleStore on PostgreSQL (node-postgres)", async () => ({
  store: drizzleStore({ db: nodePostgres.db }),
}));
describeStoreConformance("drizzleStore on PostgreSQL (postgres.js through guardedConnections)", async () => ({
  store: drizzleStore({ db: guarded.db }),
}));
describeStoreConformance(
  "drizzleStore on PostgreSQL (postgres.js) behind a query cache and read replicas",
  async () => ({
    store: drizzleStore({ db: cachedWithReplica.db }),
  }),
);
for (const major of [3, 4] as const) {
  describeStoreConformance(`drizzleStore on PostgreSQL (postgres.js ${major}, prepare: false)`, async () => ({
    store: drizzleStore({ db: (major === 3 ? unprepared3 : unprepared4).db }),
  }));
}

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
function atomicSubject(
  database: { db: AnyDb; query(text: string, params: unknown[]): Promise<unknown[]> },
  wrapped: <TStore extends ReturnType<typeof drizzleStore<AnyDb>>>(store: TStore) => TStore = (store) => store,
) {
  return async () => ({
    store: wrapped(drizzleStore({ db: database.db })),
    storeWithWait: (waitMs: number) => wrapped(drizzleStore({ db: database.db, waitMs })),
    write: (tx: AnyDb, marker: string) => tx.execute(sql`insert into atomic_notes (marker) values (${marker})`),
    count: async (marker: string) =>
      (await database.query("select 1 from atomic_notes where marker = $1", [marker])).length,
    // PostgreSQL keeps a status in an integer column: one beyond 32 bits cannot be stored.
    unstorableResponse: { status: 2 ** 40, body: "{}" },
  });
}

describeAtomicConformance("drizzleStore on PGlite", atomicSubject(lazy(() => pglite)), { oneConnection: true });
describeAtomicConformance(
  "encryptedStore over drizzleStore on PostgreSQL (postgres.js)",
  atomicSubject(
    lazy(() => server),
    (store) => encryptedStore(store, ANSWER_KEYS),
  ),
);
describeAtomicConformance("drizzleStore on PostgreSQL (postgres.js)", atomicSubject(lazy(() => server)));
describeAtomicConformance("drizzleStore on PostgreSQL (node-postgres)", atomicSubject(lazy(() => nodePostgres)));
describeAtomicConformance(
  "drizzleStore on PostgreSQL (postgres.js through guardedConnections)",
  atomicSubject(lazy(() => guarded)),
);
describeAtomicConformance(
  "drizzleStore on PostgreSQL (postgres.js) behind a query cache and read replicas",
  atomicSubject(lazy(() => cachedWithReplica)),
);
for (const major of [3, 4] as const) {
  describeAtomicConformance(
    `drizzleStore on PostgreSQL (postgres.js ${major}, prepare: false)`,
    atomicSubject(lazy(() => (major === 3 ? unprepared3 : unprepared4))),
  );
}

/** The database once beforeAll opened it: the suites are registered before it runs. */
function lazy(database: () => { db: AnyDb; query(text: string, params: unknown[]): Promise<unknown[]> }) {
  return {
    get db() {
      return database().db;
    },
    query: (text: string, params: unknown[]) => database().query(text, params),
  };
}
