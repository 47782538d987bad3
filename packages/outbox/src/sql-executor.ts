/**
 * Another library's SQL in the caller's transaction: what pg-boss's `send` takes as its `db`, so a job is sent, or
 * not, with the procedure's own writes.
 */
import { dispatch, type Executor, type Row, rowsOfResult } from "@idemkit/drizzle/internal";
import { sql } from "drizzle-orm";

/** What a library that brings its own SQL (the `db` option of pg-boss's `send`, for one) runs it through. */
export interface SqlExecutor {
  /** Runs SQL with `$1`-style parameters in the transaction, as pg-boss's `db` option calls it. */
  executeSql(text: string, values?: unknown[]): Promise<{ rows: Row[] }>;
}

/**
 * Runs another library's SQL (positional `$1` parameters) in a Drizzle database or transaction, so what that library
 * writes commits or rolls back with the caller's own writes. It goes through `execute`, unprepared: its text is not
 * idemkit's, so it cannot be carried as a step (a statement with its own data-modifying WITH cannot be nested).
 * Each value is sent once, however often its `$n` appears (as the library wrote it, so PostgreSQL infers one type for
 * all of them); the parameters are numbered in the order they first appear. Values are sent as node-postgres would
 * send them, which such libraries are written for, whatever driver the database is on: `undefined` as null
 * (postgres.js would refuse it), a date as its ISO text and a plain object as its JSON text (Drizzle's postgres.js
 * session would pass both through unencoded).
 */
export function sqlExecutor(executor: Pick<Executor, "execute">): SqlExecutor {
  return {
    async executeSql(text, values = []) {
      const sent = values.map(asNodePostgresSends);
      // Drizzle numbers a query's parameters in the order they appear: a `$n` seen before refers to its number.
      const numbers = new Map<string, number>();
      const chunks = text.split(/\$(\d+)/).map((part, index) => {
        if (index % 2 === 0) return sql.raw(part);
        const number = numbers.get(part);
        if (number !== undefined) return sql.raw(`$${number}`);
        const position = Number(part) - 1;
        if (!(position in sent)) {
          throw new TypeError(`sqlExecutor: the SQL refers to $${part}, but ${sent.length} value(s) were given.`);
        }
        numbers.set(part, numbers.size + 1);
        return sql.param(sent[position]);
      });
      return { rows: rowsOfResult(await dispatch(executor.execute(sql.join(chunks)))) };
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
