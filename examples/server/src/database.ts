/**
 * Opens the example's database: embedded PGlite (data in `.data/`) by default, PostgreSQL through postgres.js
 * when DATABASE_URL is set. Migrations from `drizzle/` are applied on open.
 */
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";

// Not `new URL(path, import.meta.url)`: under a jsdom test environment Vite rewrites that pattern into an asset URL.
const HERE = dirname(fileURLToPath(import.meta.url));
const MIGRATIONS = join(HERE, "../drizzle");
const DATA_DIR = join(HERE, "../.data/pglite");

export type Database = PgDatabase<PgQueryResultHKT, Record<string, never>>;

export interface OpenDatabase {
  db: Database;
  description: string;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** PostgreSQL URL; PGlite when absent. */
  url?: string | undefined;
  /** postgres.js pool size. Default 10. */
  max?: number;
  /** Where PGlite keeps its files. Default `examples/server/.data/pglite`. */
  dataDir?: string;
}

export async function openDatabase({ url, max = 10, dataDir = DATA_DIR }: OpenOptions = {}): Promise<OpenDatabase> {
  if (url) {
    const { default: postgres } = await import("postgres");
    const { drizzle } = await import("drizzle-orm/postgres-js");
    const { migrate } = await import("drizzle-orm/postgres-js/migrator");
    const client = postgres(url, { max, onnotice: () => {} });
    const db = drizzle(client);
    await migrate(db, { migrationsFolder: MIGRATIONS });
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
