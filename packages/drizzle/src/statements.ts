/**
 * How idemkit's tables are read and written: fixed SQL texts run as named prepared statements through a Drizzle
 * database's own session, the same on postgres.js, PGlite and node-postgres.
 */
import { IdempotencyError, IdempotencyErrorCode } from "@idemkit/core";
import { sha256Hex } from "@idemkit/core/internal";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { getTableConfig, type PgTable } from "drizzle-orm/pg-core";
import { databaseMessageOf, sqlStateOf } from "./driver-errors.js";

// biome-ignore lint/suspicious/noExplicitAny: idemkit works with any schema the caller's database was built with
export type AnyPgDatabase = PgDatabase<PgQueryResultHKT, any, any>;

/** What runs a statement: a database or a transaction. */
export type Executor = Pick<AnyPgDatabase, "_">;
export type Row = Record<string, unknown>;

/** A statement: its SQL is fixed, so it is prepared once per connection under `name`. */
export interface Statement {
  name: string;
  text: string;
}

/** The table's name as SQL, schema-qualified when it has one, from the table's own config. */
export function qualifiedName(table: PgTable): string {
  const { name, schema } = getTableConfig(table);
  const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;
  return schema ? `${quote(schema)}.${quote(name)}` : quote(name);
}

/**
 * Names `statements` for `table` (qualified and quoted): as written on `defaultTable`, and with a short hash of the
 * table's name on any other, so that two tables' statements on one connection never share a prepared name.
 */
export function namedFor<T extends Record<string, Statement>>(statements: T, table: string, defaultTable: string): T {
  const suffix = table === `"${defaultTable}"` ? "" : `_${sha256Hex(table).slice(0, 8)}`;
  for (const statement of Object.values(statements)) statement.name += suffix;
  return statements;
}

/**
 * Sends a query now. Drizzle's query promises start only when awaited; starting them explicitly keeps queries
 * in the order they were written even when the caller does not wait for one before sending the next.
 */
export function dispatch<T>(query: PromiseLike<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    query.then(resolve, reject);
  });
}

/**
 * Runs a statement as a named prepared statement: parsed and planned once per connection,
 * then one round trip each time. (`db.execute` would send it unprepared, which postgres.js answers in two round
 * trips: one to learn the parameter types, one to run.) postgres.js answers with an array of rows; PGlite and
 * node-postgres with `{ rows }`.
 */
export function run(executor: Executor, statement: Statement, params: unknown[]): Promise<Row[]> {
  const prepared = executor._.session.prepareQuery({ sql: statement.text, params }, undefined, statement.name, false);
  const rows = dispatch(prepared.execute()).then(
    (result: unknown) => (Array.isArray(result) ? result : (result as { rows: Row[] }).rows) as Row[],
  );
  // Another library's SQL (sqlExecutor) fails as it is: its tables are not idemkit's to name.
  return statement.name.startsWith(FOREIGN_STATEMENT) ? rows : rows.catch(explainMissingTables);
}

/** What sqlExecutor names the statements it runs for another library. */
const FOREIGN_STATEMENT = "idemkit_sql_";

/**
 * A statement of idemkit's that PostgreSQL refused because its tables are missing or from an older version is an
 * operator's to fix, not a database that is away: said as such (STORE_MISCONFIGURED, a 500 that clients do not
 * retry), naming what is missing and how to make it.
 */
function explainMissingTables(error: unknown): never {
  const state = sqlStateOf(error);
  const detail = databaseMessageOf(error);
  if (state === "42P01" || state === "42703" || state === "42883") {
    throw new IdempotencyError(
      IdempotencyErrorCode.STORE_MISCONFIGURED,
      `idemkit's tables are missing or out of date in this database (${detail}). Add them to your Drizzle schema ` +
        '(export { idempotencyKeys } from "@idemkit/drizzle", and outboxEvents and processedEvents if you use them) ' +
        "and apply your migrations (drizzle-kit generate, then drizzle-kit migrate; or drizzle-kit push), or apply " +
        "the SQL in @idemkit/drizzle's repository, drizzle/.",
      { cause: error },
    );
  }
  if (state === "23502" && /"fence"/.test(detail)) {
    throw new IdempotencyError(
      IdempotencyErrorCode.STORE_MISCONFIGURED,
      `The idempotency_keys table is from an older version of idemkit (${detail}): its fence must be an identity ` +
        "column. Apply drizzle/0002_fences_never_repeat.sql (drizzle-kit generate makes the same change from the " +
        "schema; add its setval line).",
      { cause: error },
    );
  }
  throw error;
}

/** What a purge of one of idemkit's tables takes: the database, the cut-off, and optionally the table and batch. */
export interface PurgeOptions<TTable> {
  db: AnyPgDatabase;
  /** Rows older than this go, in ms since the epoch. */
  before: number;
  /** The table, when it is not the default one. */
  table?: TTable;
  /** Rows deleted per statement. Default 1,000. */
  batchSize?: number;
}

/**
 * Runs a purge statement (`$1` a cut-off, `$2` a batch size; one row back with `deleted`) until a batch comes back
 * short: each batch is its own short statement, so a large purge never holds many rows at once. Returns the total.
 */
export async function purgeInBatches(
  executor: Executor,
  statement: Statement,
  cutoff: number,
  batchSize: number,
): Promise<number> {
  let total = 0;
  for (;;) {
    const [row] = await run(executor, statement, [cutoff, batchSize]);
    const deleted = Number(row?.deleted ?? 0);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}

/** What a library that brings its own SQL (the `db` option of pg-boss's `send`, for one) runs it through. */
export interface SqlExecutor {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: Row[] }>;
}

/**
 * Runs another library's SQL (positional `$1` parameters) in a Drizzle database or transaction, so what that library
 * writes commits or rolls back with the caller's own writes. Each text is prepared once per connection, under a name
 * made from its hash. Parameters are sent as node-postgres would send them, which such libraries are written for,
 * whatever driver the database is on: `undefined` as null (postgres.js would refuse it), a date as its ISO text and
 * a plain object as its JSON text (Drizzle's postgres.js session would pass both through unencoded).
 */
export function sqlExecutor(executor: Executor): SqlExecutor {
  return {
    async executeSql(text, values = []) {
      const name = `${FOREIGN_STATEMENT}${sha256Hex(text).slice(0, 16)}`;
      return { rows: await run(executor, { name, text }, values.map(asNodePostgresSends)) };
    },
  };
}

function asNodePostgresSends(value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value !== "object" || value === null) return value;
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value) || ArrayBuffer.isView(value)) return value;
  return JSON.stringify(value);
}
