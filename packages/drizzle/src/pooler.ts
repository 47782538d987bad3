/**
 * postgres.js with its default `prepare: true` behind a transaction pooler (PgBouncer, Supabase's Supavisor, Neon's
 * pooled URL, without prepared statements): it prepares every statement, COMMIT included, on its own connection,
 * and the pooler hands the next transaction to a server connection that never saw them. PostgreSQL refuses the
 * COMMIT as a missing statement, which aborts the transaction; postgres.js sends it again, and PostgreSQL answers
 * a COMMIT in an aborted transaction with ROLLBACK, which postgres.js reports as success. Measured on PgBouncer
 * 1.18: 8 and 9 of 60 plain transactions on postgres.js 3.4.9, in two runs, reported committed and not there.
 */
import { IdempotencyError, IdempotencyErrorCode } from "@idemkit/core";

/** What `guardedConnections` marks its socket factory with: its sockets fail a COMMIT answered ROLLBACK. */
export const FAILS_ROLLED_BACK_COMMITS = Symbol.for("idemkit.failsRolledBackCommits");

/** The postgres.js options of `db`'s client, or undefined on another driver. */
function postgresJsOptions(db: object): { prepare?: unknown; socket?: unknown } | undefined {
  const withPrimary = db as { $primary?: object; $client?: unknown };
  const client = ((withPrimary.$primary as { $client?: unknown } | undefined)?.$client ?? withPrimary.$client) as
    | { begin?: unknown; options?: { prepare?: unknown; socket?: unknown } }
    | undefined;
  return typeof client?.begin === "function" ? client.options : undefined;
}

/** postgres.js's `prepare` option on `db` (true, its default, or false), or undefined on another driver. */
export function postgresJsPrepare(db: object): boolean | undefined {
  const prepare = postgresJsOptions(db)?.prepare;
  return typeof prepare === "boolean" ? prepare : undefined;
}

/**
 * Whether a COMMIT on `db` that PostgreSQL answered ROLLBACK is reported as one: through `guardedConnections`, whose
 * sockets fail it; else it may be reported done (postgres.js with `prepare` on, behind a pooler).
 */
export function failsRolledBackCommits(db: object): boolean {
  const socket = postgresJsOptions(db)?.socket as { [FAILS_ROLLED_BACK_COMMITS]?: true } | undefined;
  return socket?.[FAILS_ROLLED_BACK_COMMITS] === true;
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
