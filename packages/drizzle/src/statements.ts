/**
 * How idemkit's statements are sent (see statement-text.ts for how each is written): as one prepared statement
 * through Drizzle's public query builder, the same on postgres.js, PGlite and node-postgres, or unprepared as text
 * with its values written in as literals where a transaction pooler is.
 */
import { IdempotencyError, IdempotencyErrorCode } from "@idemkit/core";
import { sql } from "drizzle-orm";
import type { Executor, Row } from "./database.js";
import { rowsOfResult } from "./driver.js";
import { databaseMessageOf, explainMissingTables, isPreparedStatementLost } from "./driver-errors.js";
import { primaryOf } from "./drizzle-session.js";
import { databaseOf, namesStatements, stopNaming } from "./named-databases.js";
import { isDatabase, keepPrepared, keptPrepared, registerDatabase } from "./prepared-queries.js";
import { sqlLiteral } from "./sql-literal.js";
import { carrierOf, carrierSelect, literalTextOf, type Statement } from "./statement-text.js";

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

/**
 * Sends `statement` with its values written into its text as literals (see `sql-literal.ts`), and no parameters:
 * one round trip on every driver, where a statement with parameters that is not prepared costs postgres.js two (it
 * asks the server for their types first: 6.3 round trips added by atomic mode through PgBouncer, against 1.6
 * directly). The text is rendered once per statement, the literals put in its placeholders each time; `joined`, a
 * command, ends the same text. Its rows are read by position, as Drizzle reads a select's: a driver's option that
 * renames columns (postgres.js's `transform`) changes nothing.
 */
function unprepared(executor: Executor, statement: Statement, params: unknown[], joined?: string): Promise<Row[]> {
  const { text, columns } = literalTextOf(statement);
  const literal = text.replace(/\$(\d+)/g, (_, n: string) => sqlLiteral(params[Number(n) - 1]));
  // Sent now (see `dispatch`): a command sent behind it must never reach the driver first.
  const sending = dispatch(
    (primaryOf(executor) as Executor).execute(sql.raw(joined ? `${literal}; ${joined}` : literal)),
  );
  return sending.then((result) => {
    // postgres.js 4 answers a text of several statements with one result each; postgres.js 3 with all rows in one.
    const rows = rowsOfResult(result);
    const own = (joined && Array.isArray(rows[0]) ? rows[0] : rows) as Row[];
    return own.map((row) => {
      const values = Object.values(row);
      return Object.fromEntries(columns.map((column, index) => [column, values[index]]));
    });
  });
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
  registerDatabase(executor);
  let total = 0;
  for (;;) {
    const [row] = await run(executor, statement, [cutoff, batchSize]);
    const deleted = Number(row?.deleted ?? 0);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}
