/**
 * Optimistic concurrency for updates: a row carries a version, a client sends the version it read, and the write is
 * one conditional statement, `UPDATE … SET …, version = version + 1 WHERE <row> AND version = <what the client
 * read>`. No row updated means someone changed the row since: the write is refused instead of silently overwriting
 * their change. Idempotency keys make a retry safe; versions make a stale edit safe.
 *
 * In a tRPC procedure, answer the refusal with `TRPCError({ code: "CONFLICT" })`: idemkit does not store a 409, and
 * its client does not retry one, so the user can reload and edit again.
 */

import { and, eq, getTableColumns, type SQL, sql } from "drizzle-orm";
import { getTableConfig, type PgColumn, type PgTable, type PgUpdateSetSource } from "drizzle-orm/pg-core";
import type { AnyPgDatabase } from "./database.js";

/** The row was changed (or deleted) since the version the write was based on. */
export class StaleVersionError extends Error {
  override readonly name = "StaleVersionError";
  constructor(
    readonly table: string,
    readonly expectedVersion: number,
  ) {
    super(
      `The ${table} row is no longer at version ${expectedVersion}: someone changed it since it was read. ` +
        "Reload it and apply the change again.",
    );
  }
}

/** What `updateIfVersion` writes: the row, the version it was read at, and the changes. */
export interface VersionedUpdate<TTable extends PgTable> {
  /**
   * Which row: the primary key condition, e.g. `eq(carts.id, input.id)`, or `and(…)` with the owner's too (typed
   * `SQL | undefined` by Drizzle; undefined is refused, never taken as every row).
   */
  where: SQL | undefined;
  /** The version column (an integer). */
  version: PgColumn;
  /** The version the client read, and so the one the write is based on. */
  expectedVersion: number;
  /** The changes; the version is set by the update itself. */
  set: PgUpdateSetSource<TTable>;
}

/**
 * Updates the row if it is still at `expectedVersion`, raising its version by one, and returns the new version.
 * Throws {@link StaleVersionError} when the row moved on (or is gone); nothing is written then.
 */
export async function updateIfVersion<TTable extends PgTable>(
  db: Pick<AnyPgDatabase, "update">,
  table: TTable,
  { where, version, expectedVersion, set }: VersionedUpdate<TTable>,
): Promise<number> {
  if (where === undefined) throw new TypeError("updateIfVersion(): `where` must name the row to update.");
  const versionKey = Object.entries(getTableColumns(table)).find(([, column]) => column === version)?.[0];
  if (versionKey === undefined) throw new TypeError("updateIfVersion(): `version` is not a column of this table.");
  const changes = { ...set, [versionKey]: sql`${version} + 1` } as PgUpdateSetSource<TTable>;
  const updated = (await db
    .update(table)
    .set(changes)
    .where(and(where, eq(version, expectedVersion)))
    .returning({ version })) as Array<{ version: unknown }>;
  const [row] = updated;
  if (!row) throw new StaleVersionError(getTableConfig(table).name, expectedVersion);
  return Number(row.version);
}
