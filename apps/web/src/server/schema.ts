/**
 * The checkout's tables, plus idemkit's, exactly as an app includes it. `npm run db:generate -w @idemkit/web`
 * writes `apps/web/drizzle/` from this file.
 */
import { index, integer, pgTable, serial, text, timestamp } from "drizzle-orm/pg-core";

export { idempotencyKeys } from "@idemkit/drizzle";
export { outboxEvents, processedEvents } from "@idemkit/outbox";

export const orders = pgTable(
  "orders",
  {
    id: serial("id").primaryKey(),
    userId: text("user_id").notNull(),
    totalCents: integer("total_cents").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    /** The customer's delivery note, editable after the order: versioned, so an edit made from a stale page is refused. */
    note: text("note").notNull().default(""),
    version: integer("version").notNull().default(1),
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

/**
 * The order confirmations "sent" (the demo's stand-in for an email), written by the confirmation worker through
 * processOnce: one row per order, however often its event is published.
 */
export const confirmations = pgTable("confirmations", {
  id: serial("id").primaryKey(),
  orderId: integer("order_id")
    .notNull()
    .references(() => orders.id),
  sentAt: timestamp("sent_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
});
