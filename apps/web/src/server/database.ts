/**
 * The demo's database, opened and migrated once per server process: embedded PGlite by default, PostgreSQL
 * through postgres.js when DATABASE_URL is set. The promise lives on globalThis because Next.js may evaluate this
 * module more than once (dev reloads, separate route bundles), and each PGlite instance costs hundreds of MB.
 */
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
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
  /**
   * Where migrations go when `url` is a transaction pooler's (Supabase's and Neon's DIRECT_URL): straight to the
   * server. Default `url`.
   */
  directUrl?: string | undefined;
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
  cache.idemkitDatabase ??= openDatabase({
    url: env.databaseUrl,
    directUrl: env.directUrl,
    dataDir: env.pgliteDir,
  }).catch((error: unknown) => {
    cache.idemkitDatabase = undefined; // let the next request try again rather than fail forever
    throw error;
  });
  return cache.idemkitDatabase;
}

/** Opens a database and applies the demo's migrations: PostgreSQL at `url`, else PGlite in `dataDir`. */
export async function openDatabase({
  url,
  directUrl = url,
  max = 10,
  dataDir = DEFAULT_PGLITE_DIR,
}: OpenOptions = {}): Promise<OpenDatabase> {
  if (url) {
    const { default: postgres } = await import("postgres");
    const { drizzle } = await import("drizzle-orm/postgres-js");
    const { migrate } = await import("drizzle-orm/postgres-js/migrator");
    const { guardedConnections } = await import("@idemkit/postgres-js-guard");
    const migrator = postgres(directUrl ?? url, { max: 1, onnotice: () => {}, prepare: false, ...BOUNDED });
    try {
      await againWhileRacing(() => migrate(drizzle(migrator), { migrationsFolder: MIGRATIONS }));
    } finally {
      await migrator.end({ timeout: 1 });
    }
    // The guard ends a connection the database dropped without postgres.js's defects there (see its module).
    // Statements are not prepared, as a transaction pooler between here and PostgreSQL requires.
    const client = postgres(url, guardedConnections({ max, onnotice: () => {}, prepare: false, ...BOUNDED }));
    return {
      db: drizzle(client),
      description: `PostgreSQL at ${new URL(url).host}`,
      close: () => client.end({ timeout: 5 }),
    };
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
 * postgres.js waits 30 s for a connection by default. A database that does not answer must cost a request seconds,
 * not minutes (idemkit answers 503 past its own limits, see docs/failure-behaviour.md). On the server,
 * idemkit bounds its transactions' statements per transaction, not as connection settings, which a transaction
 * pooler refuses; an operator sets the rest on the role (idle_in_transaction_session_timeout).
 */
const BOUNDED = {
  /** Seconds to establish a connection. */
  connect_timeout: 5,
  /**
   * Seconds between attempts to reconnect: at most 1, where postgres.js's default grows to 20 while the database is
   * down, and so keeps the app unavailable long after the database is back.
   */
  backoff: (attempt: number) => Math.min(0.1 * 2 ** attempt, 1),
} as const;

/** How many times an instance migrates before it gives up: each lost race is one more instance that won. */
const MIGRATION_ATTEMPTS = 5;

/**
 * Migrates, again while it fails: instances that start together on an empty database race on the same `create
 * table`, in one transaction each; the losers' transactions roll back whole, and their next attempt finds the
 * migrations applied. That holds because each of the demo's migrations makes a table or an index: Drizzle reads
 * what was applied before its transaction, so two instances would both apply a migration that only changes data. No lock is held across statements, so it works through a transaction pooler too, where a
 * session's advisory lock would stay behind on a server connection another client then gets.
 */
async function againWhileRacing(migrate: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrate();
    } catch (error) {
      if (attempt >= MIGRATION_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}
