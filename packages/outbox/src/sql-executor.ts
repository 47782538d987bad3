/**
 * Another library's SQL in the caller's transaction: what pg-boss's `send` takes as its `db`, so a job is sent, or
 * not, with the procedure's own writes.
 */
import { dispatch, type Executor, type Row, rowsOfResult } from "@idemkit/drizzle/internal";
import { sql } from "drizzle-orm";

/** What a library that brings its own SQL (the `db` option of pg-boss's `send`, for one) runs it through. */
export interface SqlExecutor {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: Row[] }>;
}

/**
 * Runs another library's SQL (positional `$1` parameters) in a Drizzle database or transaction, so what that library
 * writes commits or rolls back with the caller's own writes. It goes through `execute`, unprepared: its text is not
 * idemkit's, so it cannot be carried as a step (a statement with its own data-modifying WITH cannot be nested). Each
 * `$n` is sent as a parameter of its own where it appears, with the same value. Parameters are sent as node-postgres
 * would send them, which such libraries are written for, whatever driver the database is on: `undefined` as null
 * (postgres.js would refuse it), a date as its ISO text and a plain object as its JSON text (Drizzle's postgres.js
 * session would pass both through unencoded).
 */
export function sqlExecutor(executor: Executor): SqlExecutor {
  return {
    async executeSql(text, values = []) {
      const sent = values.map(asNodePostgresSends);
      const parts = text.split(/\$(\d+)/);
      const query = sql.join(
        parts.map((part, index) => (index % 2 === 0 ? sql.raw(part) : sql.param(sent[Number(part) - 1] ?? null))),
      );
      return { rows: rowsOfResult(await dispatch(executor.execute(query))) };
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
