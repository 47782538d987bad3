/**
 * The driver under a Drizzle database, as idemkit's transactions meet it: one place that tells the client kinds
 * apart, so that the store, atomic mode and `processOnce` hold no branch for one.
 *
 * - postgres.js 4: idemkit begins the transaction itself, its first statement in BEGIN's flight and COMMIT's answer
 *   read; postgres.js 3: its own `sql.begin` (see `postgres-js.ts`).
 * - a node-postgres pool: Drizzle's transaction on a client in pipeline mode (see `node-postgres.ts`).
 * - PGlite, a single node-postgres `Client`, and any other: Drizzle's `db.transaction`. PGlite has no network.
 * Every COMMIT but postgres.js 3's with `prepare` on is never prepared, so it is failed, not reported done, unless
 * the transaction had already failed, which the statement that found it failed says first.
 */
import { nodePostgresDriver, nodePostgresPool } from "./node-postgres.js";
import { postgresJsClient, postgresJsDriver } from "./postgres-js.js";
import type { AnyPgDatabase } from "./statements.js";

/** How idemkit runs a transaction on one database's driver. */
export interface Driver {
  /**
   * Runs `work` in one transaction, handing it the transaction Drizzle makes for `db` (which `tx.transaction`
   * nests with savepoints). Resolves once the driver reports the COMMIT done.
   */
  transaction<T>(work: (tx: unknown) => Promise<T>): Promise<T>;
  /**
   * Whether a COMMIT reported done was one. Where not (postgres.js 3 with `prepare` on, whose prepared COMMIT a
   * transaction pooler loses, and which then reports the ROLLBACK PostgreSQL answered as done), the caller reads
   * back what its transaction wrote before calling it kept.
   */
  readonly provesCommits: boolean;
}

const drivers = new WeakMap<object, Driver>();

/** The driver of `db`, told apart once per database. */
export function driverOf(db: AnyPgDatabase): Driver {
  let driver = drivers.get(db);
  if (!driver) {
    const postgresJs = postgresJsClient(db);
    const nodePostgres = nodePostgresPool(db);
    driver = postgresJs
      ? postgresJsDriver(db, postgresJs)
      : nodePostgres
        ? nodePostgresDriver(db, nodePostgres)
        : { transaction: (work) => db.transaction(work), provesCommits: true };
    drivers.set(db, driver);
  }
  return driver;
}
