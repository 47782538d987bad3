/**
 * Drizzle databases with the idemkit migrations applied: an in-memory PGlite, or a fresh database on a real
 * PostgreSQL server through postgres.js. Tests run the same code against both.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { drizzle as drizzleNodePostgres } from "drizzle-orm/node-postgres";
import { migrate as migrateNodePostgres } from "drizzle-orm/node-postgres/migrator";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import pg from "pg";
import postgres from "postgres";
import type { RunningPgbouncer } from "./pgbouncer.js";
import { createDatabase } from "./postgres.js";

/** The repository's drizzle-kit migrations. */
// Not `new URL(path, import.meta.url)`: under a jsdom test environment Vite rewrites that pattern into an asset URL.
export const MIGRATIONS_FOLDER = join(dirname(fileURLToPath(import.meta.url)), "../../../drizzle");

/**
 * The statements of the migrations that make `table` what it is now, in the order drizzle-kit applies them: for a
 * test that builds one of idemkit's tables by hand, beside an app's own, as an app's migration tool would.
 */
export function migrationStatementsFor(table: string): string[] {
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, "meta", "_journal.json"), "utf8")) as {
    entries: Array<{ tag: string }>;
  };
  return journal.entries
    .map(({ tag }) => readFileSync(join(MIGRATIONS_FOLDER, `${tag}.sql`), "utf8"))
    .filter((migration) => migration.includes(`"${table}"`))
    .flatMap((migration) => migration.split("--> statement-breakpoint"));
}

export type PgliteDatabase = ReturnType<typeof drizzlePglite>;
export type PostgresDatabase = ReturnType<typeof drizzlePostgres>;
export type NodePostgresDatabase = ReturnType<typeof drizzleNodePostgres<Record<string, never>, pg.Pool>>;

export interface OpenedDatabase<TDb> {
  db: TDb;
  /** Runs raw SQL for test setup and checks (business tables, row counts). */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/** A new in-memory PGlite with the migrations applied. */
export async function openPglite(): Promise<OpenedDatabase<PgliteDatabase>> {
  const client = new PGlite();
  const db = drizzlePglite(client);
  await migratePglite(db, { migrationsFolder: MIGRATIONS_FOLDER });
  return {
    db,
    query: async <T>(text: string, params: unknown[] = []) => (await client.query<T>(text, params)).rows,
    close: () => client.close(),
  };
}

export interface PostgresOpenOptions {
  /** Connection pool size. Default 10. */
  max?: number;
  /**
   * Connect through this transaction pooler, as an app on a pooled URL does; migrations and `query` still go
   * straight to the server, as over a direct URL.
   */
  through?: RunningPgbouncer;
  /** postgres.js's own `prepare` (default true): false, as its users behind a transaction pooler are told to. */
  prepare?: boolean;
}

/** A new database on the server at `serverUrl`, migrated, behind a postgres.js pool; dropped on close. */
export async function openPostgres(
  serverUrl: string,
  { max = 10, through, prepare }: PostgresOpenOptions = {},
): Promise<OpenedDatabase<PostgresDatabase> & { url: string }> {
  const database = await createDatabase(serverUrl);
  const direct = postgres(database.url, { max: through ? 2 : max, onnotice: () => {} });
  await migratePostgres(drizzlePostgres(direct), { migrationsFolder: MIGRATIONS_FOLDER });
  const pooled =
    through && connectPostgres(database.url, { max, through, ...(prepare === undefined ? {} : { prepare }) });
  return {
    db: pooled?.db ?? drizzlePostgres(direct),
    url: database.url,
    query: async <T>(text: string, params: unknown[] = []) =>
      (await direct.unsafe(text, params as postgres.ParameterOrJSON<never>[])) as unknown as T[],
    async close() {
      await Promise.all([pooled?.close(), direct.end({ timeout: 5 })]);
      await database.drop();
    },
  };
}

/** Like {@link openPostgres}, through node-postgres (`pg`) instead of postgres.js. */
export async function openNodePostgres(
  serverUrl: string,
  { max = 10, through }: Omit<PostgresOpenOptions, "prepare"> = {},
): Promise<OpenedDatabase<NodePostgresDatabase> & { url: string }> {
  const database = await createDatabase(serverUrl);
  const direct = new pg.Pool({ connectionString: database.url, max: through ? 2 : max });
  await migrateNodePostgres(drizzleNodePostgres({ client: direct }), { migrationsFolder: MIGRATIONS_FOLDER });
  const pooled = through && connectNodePostgres(database.url, { max, through });
  return {
    db: pooled?.db ?? drizzleNodePostgres({ client: direct }),
    url: database.url,
    query: async <T>(text: string, params: unknown[] = []) => (await direct.query(text, params)).rows as T[],
    async close() {
      await Promise.all([pooled?.close(), direct.end()]);
      await database.drop();
    },
  };
}

/**
 * A pool of its own on the database at `url` (one opened above), through `through` when given: a second app
 * instance. `close` ends the pool and leaves the database.
 */
export function connectPostgres(
  url: string,
  { max = 10, through, prepare }: PostgresOpenOptions = {},
): { db: PostgresDatabase; close(): Promise<void> } {
  const client = postgres(through ? through.pooled(url) : url, {
    max,
    onnotice: () => {},
    ...(prepare === undefined ? {} : { prepare }),
  });
  return { db: drizzlePostgres(client), close: () => client.end({ timeout: 5 }) };
}

/** Like {@link connectPostgres}, through node-postgres. */
export function connectNodePostgres(
  url: string,
  { max = 10, through }: Omit<PostgresOpenOptions, "prepare"> = {},
): { db: NodePostgresDatabase; close(): Promise<void> } {
  const pool = new pg.Pool({ connectionString: through ? through.pooled(url) : url, max });
  return { db: drizzleNodePostgres({ client: pool }), close: () => pool.end() };
}
