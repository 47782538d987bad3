/**
 * How idemkit's tables are read and written: fixed SQL texts, each sent as one prepared statement through Drizzle's
 * public query builder, the same on postgres.js, PGlite and node-postgres.
 *
 * Drizzle prepares a statement by name only through a query builder (`.prepare(name)`), and a select is the one
 * builder that takes any SQL: as a common table expression. So each statement is carried by a select over its own
 * steps, written as those expressions:
 *
 *   with "previous" as (…), "inserted" as (insert … returning …), "result" as (select … from previous …)
 *   select "claimed_fence", … from "result"
 *
 * which PostgreSQL runs as the statement itself: a data-modifying step runs once, to completion, whether or not the
 * result reads it, and a step that calls a volatile function (set_config, an advisory lock) is never folded into
 * the select that reads it. Parameters are placeholders filled when the statement runs, so its text stays the same.
 * Where statements go unprepared (a transaction pooler), the same select, rendered once, is sent as text with its
 * values written in as literals (see `unprepared`).
 */
import { IdempotencyError, IdempotencyErrorCode } from "@idemkit/core";
import { sha256Hex } from "@idemkit/core/internal";
import { type SQL, sql } from "drizzle-orm";
import { getTableConfig, type PgTable, QueryBuilder } from "drizzle-orm/pg-core";
import type { Executor, Row } from "./database.js";
import { rowsOfResult } from "./driver.js";
import { databaseMessageOf, explainMissingTables, isPreparedStatementLost } from "./driver-errors.js";
import { primaryOf } from "./drizzle-session.js";
import { databaseOf, namesStatements, stopNaming } from "./named-databases.js";
import { isDatabase, keepPrepared, keptPrepared, type Prepared, preparedOnce } from "./prepared-queries.js";
import { sqlLiteral } from "./sql-literal.js";

/** What a statement is carried by: a select over Drizzle's common table expressions, on a database or transaction. */
interface Carrier {
  with(...steps: unknown[]): {
    select(): { from(step: unknown): CarrierSelect };
  };
}

interface CarrierSelect {
  /** Drizzle's query cache, from 0.44 on: never for idemkit's statements, which write and must see every write. */
  $withCache?(config: false): CarrierSelect;
  prepare(name: string): Prepared;
  /** Its text, rendered (`$n` placeholders as they were written: see `literalTextOf`). */
  toSQL(): { sql: string };
}

/**
 * A statement: fixed texts with `$1`-style parameters, so it is prepared once per connection under `name` (on the
 * drivers that prepare).
 */
export interface Statement {
  name: string;
  /** The steps `text` reads, in order: each a select, or an insert, update or delete with `returning`. */
  steps?: Record<string, string>;
  /** What gives the rows back: a select (over the steps), or an insert, update or delete with `returning`. */
  text: string;
  /** The columns of those rows. */
  columns: readonly string[];
}

/** The table's name as SQL, schema-qualified when it has one, from the table's own config. */
export function qualifiedName(table: PgTable): string {
  const { name, schema } = getTableConfig(table);
  return schema ? `${quoteIdentifier(schema)}.${quoteIdentifier(name)}` : quoteIdentifier(name);
}

/**
 * `identifier` as SQL: quoted, any `"` in it doubled, so that it is read as exactly that name (its case kept, as
 * Drizzle names tables, and a keyword such as `order` read as a name) and never as more SQL.
 */
export function quoteIdentifier(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}

/**
 * Names each of `statements` by what it is and a short hash of its whole text, the table's name included. Two
 * tables' statements on one connection never share a name, and neither do two versions of idemkit's: behind a
 * transaction pooler, a server connection may hold a statement another process prepared, and during a rolling
 * deploy that process may run an older text under the same name (PostgreSQL would bind the new values to the old
 * text: 08P01, read as a lost connection).
 */
export function named<T extends Record<string, Statement>>(statements: T): T {
  for (const statement of Object.values(statements)) {
    statement.name += `_${sha256Hex(JSON.stringify([statement.steps ?? {}, statement.text])).slice(0, 8)}`;
  }
  return statements;
}

/**
 * Sends a query now. Drizzle's query promises start only when awaited; starting them explicitly keeps queries
 * in the order they were written even when the caller does not wait for one before sending the next.
 */
export function dispatch<T>(query: PromiseLike<T>): Promise<T> {
  // A promise is under way already (a prepared query's `execute` answers one): no second one around it.
  if (query instanceof Promise) return query;
  return new Promise((resolve, reject) => {
    query.then(resolve, reject);
  });
}

/**
 * Builds a query and sends it now (see `dispatch`). A query refused as it is built (its transaction is over) fails
 * as one refused by the database does: a rejected promise, never a throw.
 */
function sent<T>(build: () => PromiseLike<T>): Promise<T> {
  try {
    return dispatch(build());
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * `text` as Drizzle SQL, each `$n` a placeholder named `n`. Made as the `sql` tag makes it from a template (a string
 * between each two placeholders): Drizzle renders that in about a third of the time it takes for `sql.raw` pieces
 * joined (8 µs against 19 for a text with 8 placeholders), and a statement is rendered again every time it is sent
 * in a transaction.
 */
function withPlaceholders(text: string): SQL {
  const parts = text.split(/\$(\d+)/);
  const strings = parts.filter((_, index) => index % 2 === 0);
  const placeholders = parts.filter((_, index) => index % 2 === 1).map((name) => sql.placeholder(name));
  return sql(Object.assign(strings, { raw: strings }), ...placeholders);
}

/** Builds the expressions: they hold no database, only SQL, so each statement's are built once for every executor. */
const expressions = new QueryBuilder();
const carried = new WeakMap<Statement, Expressions>();

/** A statement's steps and result, as Drizzle's common table expressions. */
interface Expressions {
  steps: unknown[];
  result: unknown;
}

/** `statement`'s expressions, each text made Drizzle SQL by `render`. */
function expressionsOf(statement: Statement, render: (text: string) => SQL): Expressions {
  const steps = Object.entries(statement.steps ?? {}).map(([alias, text]) =>
    expressions.$with(alias, {}).as(render(text)),
  );
  const columns = Object.fromEntries(statement.columns.map((column) => [column, sql.raw(column).as(column)]));
  return { steps, result: expressions.$with("result", columns).as(render(statement.text)) };
}

function carrierOf(statement: Statement): Expressions {
  let built = carried.get(statement);
  if (!built) {
    built = expressionsOf(statement, withPlaceholders);
    carried.set(statement, built);
  }
  return built;
}

/** The select that carries `expressions` on `executor`: on the primary, never from Drizzle's query cache. */
function carrierSelect(executor: Executor, { steps, result }: Expressions): CarrierSelect {
  // A database made with `withReplicas` sends selects to a replica.
  const select = (primaryOf(executor) as Carrier)
    .with(...steps, result)
    .select()
    .from(result);
  return select.$withCache?.(false) ?? select;
}

/**
 * A command sent right behind a statement, before the statement's answer (the claim's savepoint): its failure is
 * the statement's, once both are answered. `inOneText` where the driver runs a text of several statements (see
 * `Transactions.runsMultiStatementTexts`): a statement sent with its values as literals then carries the command in
 * its own text, so both leave in one write. Sent as two, on postgres.js 3, the command would wait for the answer to a
 * statement of 1,024 bytes or more, which it writes at once (Nagle's algorithm: see docs/deploying.md).
 */
export interface Trailing {
  readonly text: string;
  readonly inOneText: boolean;
}

/**
 * Runs a statement as a named prepared statement: parsed and planned once per connection, then one round trip
 * each time, on the drivers that prepare (drizzle-orm 0.45.4 and later on postgres.js; node-postgres), and one
 * unnamed statement elsewhere; or unprepared, where a transaction pooler is (see `namesStatements`). Always on
 * the primary (a database made with `withReplicas` sends a select to a replica, where a write fails and a read may
 * be behind), and never from Drizzle's query cache. `trailing` goes right behind it (see `Trailing`).
 */
export function run(executor: Executor, statement: Statement, params: unknown[], trailing?: Trailing): Promise<Row[]> {
  const database = databaseOf(executor);
  const joined = trailing?.inOneText === true && !namesStatements(database) ? trailing.text : undefined;
  const rows = runAlone(executor, database, statement, params, joined);
  if (!trailing || joined) return rows;
  // Sent after the statement, it reaches the driver after it on every tested Drizzle version (the conformance suite's
  // undo test fails otherwise, at each end of the peer range): a command's is the slower of the two paths. Handled
  // from the moment it is sent: its answer can come before the statement's (postgres.js sends a prepared
  // statement PostgreSQL refused to run as cached once more, behind this command, which the aborted transaction then
  // fails), and a rejection left unhandled until then ends a plain Node process.
  const next = command(executor, trailing.text);
  next.catch(() => {});
  return rows.then(
    (result) => next.then(() => result),
    (error: unknown) =>
      next.then(
        () => Promise.reject(error),
        () => Promise.reject(error),
      ),
  );
}

/** `run` without a trailing command, or with one joined to its text when it goes unprepared. */
function runAlone(
  executor: Executor,
  database: object | undefined,
  statement: Statement,
  params: unknown[],
  joined: string | undefined,
): Promise<Row[]> {
  const attempt = () => {
    const named = namesStatements(database);
    return sent(() => {
      if (!named) return unprepared(executor, statement, params, joined);
      let prepared = keptPrepared(executor, statement);
      if (!prepared) {
        prepared = carrierSelect(executor, carrierOf(statement)).prepare(statement.name);
        keepPrepared(executor, statement, prepared);
      }
      const values: Record<string, unknown> = {};
      params.forEach((value, index) => {
        values[index + 1] = value;
      });
      return prepared.execute(values);
    }).catch((error: unknown) => {
      if (named && isPreparedStatementLost(error)) stopNaming(database);
      throw error;
    });
  };
  return attempt()
    .catch((error: unknown) => {
      if (!isPreparedStatementLost(error)) throw error;
      // On a database the same statement is sent again, unprepared. A transaction's was aborted by the failure.
      if (isDatabase(executor)) return attempt();
      throw new IdempotencyError(
        IdempotencyErrorCode.STORE_UNAVAILABLE,
        `A transaction pooler between this app and PostgreSQL lost the prepared statement ${statement.name} ` +
          `(${databaseMessageOf(error)}). idemkit sends its statements on this database unprepared from now on, which a pooler ` +
          "serves. Nothing of this transaction was kept: run it again.",
        { cause: error },
      );
    })
    .catch(explainMissingTables);
}

/**
 * Runs `statement` unprepared, whatever the database (see `unprepared`): for a read whose job is to see through a
 * transaction pooler (the read-back of a COMMIT a pooler may have lost), which a statement prepared by name cannot
 * do there: it would be lost itself, or wait for ever for the answer to its question about its parameters' types,
 * which PgBouncer before 1.21 drops outside a transaction (see docs/deploying.md).
 */
export function runUnprepared(executor: Executor, statement: Statement, params: unknown[]): Promise<Row[]> {
  return sent(() => unprepared(executor, statement, params)).catch(explainMissingTables);
}

/** Each statement's whole text, its steps and result as one select, with its own `$n` placeholders in it. */
const literalTexts = new WeakMap<Statement, string>();

function literalTextOf(statement: Statement): string {
  let text = literalTexts.get(statement);
  if (text === undefined) {
    const { steps, result } = expressionsOf(statement, (part) => sql.raw(part));
    text = (expressions as unknown as Carrier)
      .with(...steps, result)
      .select()
      .from(result)
      .toSQL().sql;
    literalTexts.set(statement, text);
  }
  return text;
}

/**
 * Sends `statement` with its values written into its text as literals (see `sql-literal.ts`), and no parameters:
 * one round trip on every driver, where a statement with parameters that is not prepared costs postgres.js two (it
 * asks the server for their types first: 6.3 round trips added by atomic mode through PgBouncer, against 1.6
 * directly). The text is rendered once per statement, the literals put in its placeholders each time; `joined`, a
 * command, ends the same text. Its rows are read by position, as Drizzle reads a select's: a driver's option that
 * renames columns (postgres.js's `transform`) changes nothing.
 */
function unprepared(executor: Executor, statement: Statement, params: unknown[], joined?: string): Promise<Row[]> {
  const text = literalTextOf(statement).replace(/\$(\d+)/g, (_, n: string) => sqlLiteral(params[Number(n) - 1]));
  // Sent now (see `dispatch`): a command sent behind it must never reach the driver first.
  const sending = dispatch((primaryOf(executor) as Executor).execute(sql.raw(joined ? `${text}; ${joined}` : text)));
  return sending.then((result) =>
    rowsOfFirst(rowsOfResult(result)).map((row) => {
      const values = Object.values(row);
      return Object.fromEntries(statement.columns.map((column, index) => [column, values[index]]));
    }),
  );
}

/**
 * The rows of a text's first statement: postgres.js 4 answers a text of several with one result each (arrays of
 * rows), postgres.js 3 with the rows of all in one.
 */
function rowsOfFirst(rows: unknown[]): Row[] {
  return (Array.isArray(rows[0]) ? rows[0] : rows) as Row[];
}

/**
 * Runs a fixed text that returns no rows and cannot be a step (SAVEPOINT, ROLLBACK TO SAVEPOINT), unprepared. Sent
 * at once, so it travels right behind the statement sent before it.
 */
export function command(executor: Executor, text: string): Promise<void> {
  return sent(() => executor.execute(sql.raw(text))).then(() => {});
}

/**
 * Runs a purge statement (`$1` a cut-off, `$2` a batch size; one row back with `deleted`) on a database (never a
 * transaction) until a batch comes back short: each batch is its own short statement, so a large purge never holds many rows at once. Returns the total.
 */
export async function purgeInBatches(
  executor: Executor,
  statement: Statement,
  cutoff: number,
  batchSize: number,
): Promise<number> {
  preparedOnce(executor);
  let total = 0;
  for (;;) {
    const [row] = await run(executor, statement, [cutoff, batchSize]);
    const deleted = Number(row?.deleted ?? 0);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}
