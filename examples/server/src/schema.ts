/**
 * The example's Drizzle schema: its own tables plus idemkit's, exactly as an app includes it. drizzle-kit
 * generates `examples/server/drizzle/` from this file.
 */
import { integer, jsonb, pgTable, serial, text, timestamp } from "drizzle-orm/pg-core";

export { idempotencyKeys } from "@idemkit/drizzle";

export const orders = pgTable("orders", {
  id: serial("id").primaryKey(),
  userId: text("user_id").notNull(),
  items: jsonb("items").$type<OrderItem[]>().notNull(),
  totalCents: integer("total_cents").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
});

export interface OrderItem {
  sku: string;
  qty: number;
}
