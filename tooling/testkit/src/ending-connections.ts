/**
 * A test file's own migrated database on the test server, whose connections its tests end as a crash or a restart
 * ends them (`pg_terminate_backend`), through a connection of the file's own. The pools the file tracks are closed
 * after its tests.
 */
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { afterAll, beforeAll, inject } from "vitest";
import { MIGRATIONS_FOLDER } from "./databases.js";
import { createDatabase } from "./postgres.js";

export interface EndingConnections {
  /** The database's URL, once the file's tests run. */
  readonly url: string;
  /** The file's own connection: setup and checks, and what ends the others. */
  readonly admin: postgres.Sql;
  /** Closes `pool` after the file's tests; returns it. */
  track<TPool extends postgres.Sql>(pool: TPool): TPool;
  /** Ends the server process of one connection. */
  terminate(pid: unknown): Promise<void>;
  /** Ends the server process behind a Drizzle transaction's (or database's) connection. */
  terminateBackendOf(tx: { execute: ReturnType<typeof drizzle>["execute"] }): Promise<void>;
}

/** Registers the file's setup and returns its database; see the file's comment. */
export function endingConnections(): EndingConnections {
  let database: Awaited<ReturnType<typeof createDatabase>> | undefined;
  let admin: postgres.Sql | undefined;
  const pools: postgres.Sql[] = [];
  beforeAll(async () => {
    database = await createDatabase(inject("postgresUrl"));
    admin = postgres(database.url, { max: 1, onnotice: () => {} });
    await migrate(drizzle(admin), { migrationsFolder: MIGRATIONS_FOLDER });
  });
  afterAll(async () => {
    for (const pool of pools) await pool.end({ timeout: 1 });
    await admin?.end({ timeout: 1 });
    await database?.drop();
  });
  const ending: EndingConnections = {
    get url() {
      if (!database) throw new Error("endingConnections(): the database exists once the file's tests run");
      return database.url;
    },
    get admin() {
      if (!admin) throw new Error("endingConnections(): the connection exists once the file's tests run");
      return admin;
    },
    track(pool) {
      pools.push(pool);
      return pool;
    },
    async terminate(pid) {
      await ending.admin`select pg_terminate_backend(${Number(pid)})`;
    },
    async terminateBackendOf(tx) {
      const result: unknown = await tx.execute(sql`select pg_backend_pid() as pid`);
      // postgres.js answers with its rows; the other drivers with `{ rows }`.
      const [row] = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<{ pid: number }>;
      await ending.terminate(row?.pid);
    },
  };
  return ending;
}
