/**
 * The checkout's tables, plus idemkit's, exactly as an app includes it. `npm run db:generate -w @idemkit/web`
 * writes `apps/web/drizzle/` from this file.
 */
import { index, integer, pgTable, serial, text, timestamp } from "drizzle-orm/pg-core";

export { idempotencyKeys } from "@idemkit/drizzle";

export const orders = pgTable(
  "orders",
  {
    id: serial("id").primaryKey(),
    userId: text("user_id").notNull(),
    totalCents: integer("total_cents").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
  },
  (table) => [index("orders_user_id_idx").on(table.userId, table.id)],
);

export const orderLines = pgTable("order_lines", {
  id: serial("id").primaryKey(),
  orderId: integer("order_id")
    .notNull()
    .references(() => orders.id),
  sku: text("sku").notNull(),
  qty: integer("qty").notNull(),
  priceCents: integer("price_cents").notNull(),
});

/** A simulated card payment: its reference is the idempotency sub-key a real provider would receive. */
export const payments = pgTable("payments", {
  id: serial("id").primaryKey(),
  orderId: integer("order_id")
    .notNull()
    .references(() => orders.id),
  amountCents: integer("amount_cents").notNull(),
  reference: text("reference").notNull().unique(),
});
