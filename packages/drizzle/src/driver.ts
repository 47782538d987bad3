/**
 * The driver under a Drizzle database, as idemkit's transactions meet it: one place that tells the client kinds
 * apart, so that the store, atomic mode and `processOnce` hold no branch for one.
 *
 * - postgres.js 4: idemkit begins the transaction itself, its first statement in BEGIN's flight and COMMIT's answer
 *   read; postgres.js 3: its own `sql.begin` (see `postgres-js.ts`).
 * - a node-postgres pool: Drizzle's transaction on a client in pipeline mode (see `node-postgres.ts`).
 * - PGlite, a single node-postgres `Client`, and any other: Drizzle's `db.transaction`. PGlite has no network.
 * Every COMMIT but postgres.js 3's with `prepare` on is never prepared, so it is failed, not reported done, unless
 * the transaction had already failed, which the statement that found it failed says first; postgres.js 3's is
 * proved by the transaction's last statement (`commitProof`).
 *
 * Each driver also says where its statements enter (what the bypass guard watches) and, through `pooler`, what a
 * transaction pooler in front of it means for idemkit's calls.
 */
import type { AnyPgDatabase, Entrances, Row, Transactions } from "./database.js";
import { isConnectionLost, isPreparedStatementLost } from "./driver-errors.js";
import { primaryOf } from "./drizzle-session.js";
import { nodePostgresDriver, nodePostgresPool } from "./node-postgres.js";
import { afterPoolerSign, poolerChecked, provedDirect } from "./pooler.js";
import { postgresJsClient, postgresJsDriver } from "./postgres-js.js";

/**
 * What a transaction pooler means on one database, as the store, atomic mode, the relay and `processOnce` read it
 * (through `driverOf(db).pooler`): where the driver's own statements are lost behind one (postgres.js with `prepare`
 * on), the check before the first call and the signs after it; elsewhere only idemkit's named statements can be lost,
 * and `run` sends them again unnamed, so nothing waits and nothing is refused.
 */
export interface PoolerPolicy {
  /**
   * Resolves once idemkit's statements may be sent on the database (or once the check outlasted what a call waits
   * for it); rejects with the refusal where not.
   */
  checked(): Promise<void>;
  /**
   * Whether a transaction whose first statement (sent before any of the caller's work) failed with `error` may be
   * begun again: its connection was lost, or a prepared statement of idemkit's that is sent again unnamed.
   */
  beginsAgainAfter(error: unknown): boolean;
  /**
   * What a call that failed with `error` is answered with when `error` is a pooler's sign (a lost prepared statement,
   * where the driver's own are lost behind one: see `afterPoolerSign`); undefined when it is none.
   */
  signOf(error: unknown): unknown;
  /** What a call whose COMMIT was reported done and kept nothing (`detail` says so) is answered with. */
  unkeptCommit(detail: string): unknown;
  /**
   * Whether the database's connections were proved to reach PostgreSQL itself: only there is a session the
   * connection's own, so that what it holds says what the connection prepared (see `Transactions.commitProof`).
   */
  provedDirect(): boolean;
}

/** `db`'s pooler policy: see `PoolerPolicy`. */
function poolerPolicy(db: object): PoolerPolicy {
  const losesOwnStatements = postgresJsClient(db)?.options.prepare === true;
  return {
    checked: () => (losesOwnStatements ? poolerChecked(db) : Promise.resolve()),
    beginsAgainAfter: (error) => isConnectionLost(error) || (!losesOwnStatements && isPreparedStatementLost(error)),
    signOf: (error) =>
      losesOwnStatements && isPreparedStatementLost(error)
        ? afterPoolerSign(db, "PostgreSQL lost a prepared statement.", error)
        : undefined,
    unkeptCommit: (detail) => afterPoolerSign(db, detail),
    provedDirect: () => provedDirect(db),
  };
}

/** One database's driver, as idemkit meets it. */
export interface Driver extends Transactions {
  /** What a transaction pooler in front of the database means for idemkit's calls (see pooler.ts). */
  readonly pooler: PoolerPolicy;
}

const drivers = new WeakMap<object, Driver>();

/** The driver of `db`, told apart once per database. */
export function driverOf(db: AnyPgDatabase): Driver {
  let driver = drivers.get(db);
  if (!driver) {
    const postgresJs = postgresJsClient(db);
    const nodePostgres = nodePostgresPool(db);
    const transactions: Transactions = postgresJs
      ? postgresJsDriver(db, postgresJs)
      : nodePostgres
        ? nodePostgresDriver(db, nodePostgres)
        : { transaction: (work) => db.transaction(work), entrances: pgliteEntrances(db) };
    driver = { ...transactions, pooler: poolerPolicy(db) };
    drivers.set(db, driver);
  }
  return driver;
}

/** PGlite's, told apart by its public methods: one connection in the process. */
function pgliteEntrances(db: object): Entrances | undefined {
  const client = (primaryOf(db) as { $client?: Record<string, unknown> }).$client;
  const methods = ["query", "exec", "transaction"];
  if (typeof client !== "object" || client === null) return undefined;
  return methods.every((name) => typeof client[name] === "function")
    ? { client, methods, oneConnection: true }
    : undefined;
}

/** The rows of `execute`: postgres.js answers with an array of rows; PGlite and node-postgres with `{ rows }`. */
export function rowsOfResult(result: unknown): Row[] {
  return (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[];
}
