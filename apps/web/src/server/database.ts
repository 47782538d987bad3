/**
 * The demo's database, opened and migrated once per server process: embedded PGlite by default, PostgreSQL
 * through postgres.js when DATABASE_URL is set. The promise lives on globalThis because Next.js may evaluate this
 * module more than once (dev reloads, separate route bundles), and each PGlite instance costs hundreds of MB.
 */
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type { Sql } from "postgres";
import { env } from "./env";

export type Database = PgDatabase<PgQueryResultHKT, Record<string, never>>;

export interface OpenDatabase {
  db: Database;
  description: string;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** PostgreSQL URL; embedded PGlite when absent. */
  url?: string | undefined;
  /** postgres.js pool size. Default 10. */
  max?: number;
  /** Where PGlite keeps its files. Default `apps/web/.data/pglite`. */
  dataDir?: string | undefined;
}

// Relative to this file, not to the working directory: `next start apps/web` runs from the repository root.
// (Next.js keeps import.meta.url pointing at the source file; `new URL(path, import.meta.url)` would be bundled
// as an asset reference instead.)
const APP_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const MIGRATIONS = join(APP_DIR, "drizzle");
const DEFAULT_PGLITE_DIR = join(APP_DIR, ".data", "pglite");

const cache = globalThis as typeof globalThis & { idemkitDatabase?: Promise<OpenDatabase> | undefined };

/** The server process's database (DATABASE_URL, else PGlite), opened and migrated on first use. */
export function database(): Promise<OpenDatabase> {
  cache.idemkitDatabase ??= openDatabase({ url: env.databaseUrl, dataDir: env.pgliteDir }).catch((error: unknown) => {
    cache.idemkitDatabase = undefined; // let the next request try again rather than fail forever
    throw error;
  });
  return cache.idemkitDatabase;
}

/** Opens a database and applies the demo's migrations: PostgreSQL at `url`, else PGlite in `dataDir`. */
export async function openDatabase({
  url,
  max = 10,
  dataDir = DEFAULT_PGLITE_DIR,
}: OpenOptions = {}): Promise<OpenDatabase> {
  if (url) {
    const { default: postgres } = await import("postgres");
    const { drizzle } = await import("drizzle-orm/postgres-js");
    const { migrate } = await import("drizzle-orm/postgres-js/migrator");
    const { guardedConnections } = await import("@idemkit/drizzle/postgres-js");
    // The guard ends a connection the database dropped without postgres.js's defects there (see its module).
    const client = postgres(url, guardedConnections({ max, onnotice: () => {}, ...BOUNDED }));
    const db = drizzle(client);
    try {
      await inTurn(postgres(url, { max: 1, onnotice: () => {} }), () => migrate(db, { migrationsFolder: MIGRATIONS }));
    } catch (error) {
      await client.end({ timeout: 1 });
      throw error;
    }
    return { db, description: `PostgreSQL at ${new URL(url).host}`, close: () => client.end({ timeout: 5 }) };
  }
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  const { migrate } = await import("drizzle-orm/pglite/migrator");
  await mkdir(dataDir, { recursive: true });
  const client = new PGlite(dataDir);
  const db = drizzle(client);
  await migrate(db, { migrationsFolder: MIGRATIONS });
  return { db, description: `embedded PGlite in ${dataDir}`, close: () => client.close() };
}

/**
 * postgres.js waits 30 s for a connection by default, and lets a statement or an open transaction last for ever. A
 * database that does not answer must cost a request seconds, not minutes (idemkit answers 503 past its own limits,
 * see the README's "Failure behaviour"); the server ends what the app left behind.
 */
const BOUNDED = {
  /** Seconds to establish a connection. */
  connect_timeout: 5,
  /**
   * Seconds between attempts to reconnect: at most 1, where postgres.js's default grows to 20 while the database is
   * down, and so keeps the app unavailable long after the database is back.
   */
  backoff: (attempt: number) => Math.min(0.1 * 2 ** attempt, 1),
  connection: {
    /** The longest statement the checkout runs is the claim waiting for a duplicate (idemkit's waitMs, 5 s). */
    statement_timeout: 15_000,
    /** A transaction the app stopped using (a process frozen mid-request) stops holding its locks after this. */
    idle_in_transaction_session_timeout: 60_000,
  },
} as const;

/** Any 64-bit number the app uses for nothing else: the advisory lock its instances take turns migrating under. */
const MIGRATION_LOCK = "7270614126";

/**
 * Runs `migrate` while holding a PostgreSQL advisory lock on a connection of its own (`locker`, ended after), so
 * instances that start together on an empty database migrate one after the other: the first creates the tables,
 * the others find them done. Without it they race on the same `create table` and the losers fail to start.
 */
async function inTurn(locker: Sql, migrate: () => Promise<void>): Promise<void> {
  try {
    await locker`select pg_advisory_lock(${MIGRATION_LOCK}::bigint)`;
    await migrate();
  } finally {
    await locker.end({ timeout: 1 });
  }
}
