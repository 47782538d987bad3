/**
 * postgres.js with its default `prepare: true` behind a transaction pooler (PgBouncer, Supabase's Supavisor, Neon's
 * pooled URL, without prepared statements): it prepares every statement, COMMIT included, on its own connection,
 * and the pooler hands the next transaction to a server connection that never saw them. PostgreSQL refuses the
 * COMMIT as a missing statement, which aborts the transaction; postgres.js sends it again, and PostgreSQL answers
 * a COMMIT in an aborted transaction with ROLLBACK, which postgres.js reports as success. Measured on PgBouncer
 * 1.18: 9 of 60 plain transactions on postgres.js 3.4.9 reported committed and not there.
 */
import { IdempotencyError, IdempotencyErrorCode } from "@idemkit/core";

/** postgres.js's `prepare` option on `db` (true, its default, or false), or undefined on another driver. */
export function postgresJsPrepare(db: object): boolean | undefined {
  const withPrimary = db as { $primary?: object; $client?: unknown };
  const client = ((withPrimary.$primary as { $client?: unknown } | undefined)?.$client ?? withPrimary.$client) as
    | { begin?: unknown; options?: { prepare?: unknown } }
    | undefined;
  const prepare = client?.options?.prepare;
  return typeof client?.begin === "function" && typeof prepare === "boolean" ? prepare : undefined;
}

/** Whether `db` runs on postgres.js with `prepare` on, whose COMMIT may be reported done when it was rolled back. */
export function commitMayBeMisreported(db: object): boolean {
  return postgresJsPrepare(db) === true;
}

/** The refusal for such a database once a pooler showed itself: the fix is one option. */
export function poolerNeedsUnpreparedStatements(detail: string, cause?: unknown): IdempotencyError {
  return new IdempotencyError(
    IdempotencyErrorCode.STORE_MISCONFIGURED,
    `${detail} This database is behind a transaction pooler (PgBouncer, Supabase's or Neon's pooled URL), and ` +
      "postgres.js prepares every statement on its own connection, COMMIT included, which the pooler's next server " +
      "connection does not have: a COMMIT can then be rolled back and still reported done. Connect with " +
      "postgres(url, { prepare: false }), or through the database's direct URL.",
    { cause },
  );
}
