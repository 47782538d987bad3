/**
 * An app's database behind a transaction pooler, as a Next.js app on a pooled URL has it: a new database migrated
 * over the direct URL, and two app instances reaching it through the pooler, each with a pool of its own.
 */
import {
  connectNodePostgres,
  connectPostgres,
  type NodePostgresDatabase,
  openNodePostgres,
  openPostgres,
  type PostgresDatabase,
} from "./databases.js";
import type { RunningPgbouncer } from "./pgbouncer.js";

/** How the instances connect: postgres.js as its docs say to behind a pooler, or with its defaults; node-postgres. */
export type PooledDriver = "postgres.js, prepare: false" | "postgres.js defaults" | "node-postgres";

export interface PooledDatabase {
  /** The database's direct URL: `pooler.pooled(url)` reaches it through the pooler. */
  url: string;
  /** The two instances' databases. */
  instances: [PostgresDatabase | NodePostgresDatabase, PostgresDatabase | NodePostgresDatabase];
  /** Raw SQL over the direct URL, for setup and checks. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export async function openPooled(
  serverUrl: string,
  pooler: RunningPgbouncer,
  driver: PooledDriver,
  { max = 5 }: { max?: number } = {},
): Promise<PooledDatabase> {
  const options = { max, through: pooler, ...(driver === "postgres.js, prepare: false" ? { prepare: false } : {}) };
  const first =
    driver === "node-postgres" ? await openNodePostgres(serverUrl, options) : await openPostgres(serverUrl, options);
  const second =
    driver === "node-postgres" ? connectNodePostgres(first.url, options) : connectPostgres(first.url, options);
  return {
    url: first.url,
    instances: [first.db, second.db],
    query: first.query,
    async close() {
      await second.close();
      await first.close();
    },
  };
}
