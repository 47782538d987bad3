/** The checkout's tables and idemkit's, side by side: drizzle-kit migrates them all from this file. */
// #region schema
import { integer, jsonb, pgTable, serial, text, timestamp } from "drizzle-orm/pg-core";
import type { Cart } from "./cart";

// idemkit's records, and the outbox's two tables (see "Effects after the response").
export { idempotencyKeys } from "@idemkit/drizzle";
export { outboxEvents, processedEvents } from "@idemkit/outbox";

export const orders = pgTable("orders", {
  id: serial("id").primaryKey(),
  userId: text("user_id").notNull(),
  items: jsonb("items").$type<Cart["items"]>().notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  note: text("note").notNull().default(""),
  version: integer("version").notNull().default(1), // for edits that may be stale (optimistic concurrency)
});
// #endregion schema

/** The order confirmations sent: the stand-in for an email, one row per order however often its event arrives. */
export const sentMail = pgTable("sent_mail", {
  id: serial("id").primaryKey(),
  orderId: integer("order_id")
    .notNull()
    .references(() => orders.id),
});

/** Signed-in sessions, looked up by the token in the `session` cookie (see session.ts). */
export const sessions = pgTable("sessions", {
  token: text("token").primaryKey(),
  userId: text("user_id").notNull(),
  orgId: text("org_id").notNull(),
});
