/**
 * The table idemkit keeps its records in. Export it from your own Drizzle schema so drizzle-kit creates it with
 * the rest of your tables (`export { idempotencyKeys } from "@idemkit/drizzle"`); the SQL it generates is in this
 * repository's `drizzle/` folder too. Under another name or PostgreSQL schema (a table prefix that drizzle-kit's
 * `tablesFilter` expects, a schema of its own), make it with `idempotencyKeysTable` and give the same table to
 * `drizzleStore({ db, table })`.
 *
 * One row per (scope, path, key). `expires_at` is indexed so purging walks only what expired; a table that grows
 * large can be partitioned by it, so that purging becomes dropping a partition.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  check,
  index,
  integer,
  type PgSchema,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from "drizzle-orm/pg-core";

/** idemkit's table named `name`, in `schema` when given (else the search path's, usually `public`). */
export function idempotencyKeysTable<TName extends string = "idempotency_keys">(
  name: TName = "idempotency_keys" as TName,
  schema?: PgSchema,
) {
  // Both make the same table; only where it lives differs, which the store reads back from the table's config.
  const table = (schema?.table ?? pgTable) as typeof pgTable;
  return table(
    name,
    {
      /** Who the key belongs to (a user or tenant id): keys never collide across scopes. */
      scope: text("scope").notNull(),
      /** The procedure path, e.g. `checkout.placeOrder`. */
      path: text("path").notNull(),
      key: text("key").notNull(),
      /** SHA-256 (hex) of the canonical input; a reused key with another input is refused. */
      fingerprint: text("fingerprint").notNull(),
      state: text("state", { enum: ["in_progress", "completed"] }).notNull(),
      /**
       * The claim's fencing token: only its holder may renew, complete or release the record. Drawn from the column's
       * own sequence on every claim and takeover, so it never repeats for a key, not even once the record was
       * released, purged or replaced: an owner presumed dead can never act on a later claim of the same key.
       */
      fence: bigint("fence", { mode: "number" }).generatedByDefaultAsIdentity().notNull(),
      /** While in progress: when another request may take over. Null once completed. */
      leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true, precision: 3 }),
      expiresAt: timestamp("expires_at", { withTimezone: true, precision: 3 }).notNull(),
      responseStatus: integer("response_status"),
      /** The response exactly as serialized by the adapter (text, not jsonb, so replays are byte for byte). */
      responseBody: text("response_body"),
      createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    },
    (columns) => [
      primaryKey({ name: `${name}_pkey`, columns: [columns.scope, columns.path, columns.key] }),
      index(`${name}_expires_at_idx`).on(columns.expiresAt),
      check(`${name}_state_check`, sql`${columns.state} in ('in_progress', 'completed')`),
    ],
  );
}

/** The table under its default name, `idempotency_keys`. */
export const idempotencyKeys = idempotencyKeysTable();

/** A table made by {@link idempotencyKeysTable}. */
export type IdempotencyKeysTable = ReturnType<typeof idempotencyKeysTable<string>>;
