/**
 * The table idemkit keeps its records in. Export it from your own Drizzle schema so drizzle-kit creates it with
 * the rest of your tables (`export { idempotencyKeys } from "@idemkit/drizzle"`); the SQL it generates is in this
 * repository's `drizzle/` folder too.
 *
 * One row per (scope, path, key). `expires_at` is indexed so purging walks only what expired; a table that grows
 * large can be partitioned by it, so that purging becomes dropping a partition.
 */
import { sql } from "drizzle-orm";
import { check, index, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    /** Who the key belongs to (a user or tenant id): keys never collide across scopes. */
    scope: text("scope").notNull(),
    /** The procedure path, e.g. `checkout.placeOrder`. */
    path: text("path").notNull(),
    key: text("key").notNull(),
    /** SHA-256 (hex) of the canonical input; a reused key with another input is refused. */
    fingerprint: text("fingerprint").notNull(),
    state: text("state", { enum: ["in_progress", "completed"] }).notNull(),
    /** Incremented on every takeover: only the holder of the current fence may complete or release. */
    fence: integer("fence").notNull(),
    /** While in progress: when another request may take over. Null once completed. */
    leaseExpiresAt: timestamp("lease_expires_at", { withTimezone: true, precision: 3 }),
    expiresAt: timestamp("expires_at", { withTimezone: true, precision: 3 }).notNull(),
    responseStatus: integer("response_status"),
    /** The response exactly as serialized by the adapter (text, not jsonb, so replays are byte for byte). */
    responseBody: text("response_body"),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (table) => [
    primaryKey({ name: "idempotency_keys_pkey", columns: [table.scope, table.path, table.key] }),
    index("idempotency_keys_expires_at_idx").on(table.expiresAt),
    check("idempotency_keys_state_check", sql`${table.state} in ('in_progress', 'completed')`),
  ],
);
