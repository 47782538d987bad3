/**
 * The tables behind effects that leave the request: the outbox, where a procedure writes the events its
 * transaction commits to (published afterwards by a relay), and the record of events a consumer has processed, so
 * that a redelivered event is skipped. Export them from your Drizzle schema as you do `idempotencyKeys`
 * (`export { outboxEvents, processedEvents } from "@idemkit/outbox"`); the SQL is in this repository's `drizzle/`.
 */
import type { AnyPgDatabase } from "@idemkit/drizzle";
import { sql } from "drizzle-orm";
import {
  bigserial,
  check,
  index,
  integer,
  type PgSchema,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from "drizzle-orm/pg-core";

/** The outbox table named `name`, in `schema` when given. */
export function outboxEventsTable<TName extends string = "outbox_events">(
  name: TName = "outbox_events" as TName,
  schema?: PgSchema,
) {
  const table = (schema?.table ?? pgTable) as typeof pgTable;
  return table(
    name,
    {
      /** Publication order, and what a consumer may use as the event's id alongside `key`. */
      id: bigserial("id", { mode: "number" }).primaryKey(),
      /** What the event is about (`order.placed`): the relay's publish function routes on it. */
      topic: text("topic").notNull(),
      /** The event's de-duplication key: enqueued twice with one key, it is stored (and published) once. */
      key: text("key").notNull().unique(`${name}_key_unique`),
      /** The payload as JSON text, exactly as enqueued. */
      payload: text("payload").notNull(),
      /** pending (waiting, or being published), published, or dead (out of attempts; retried only by hand). */
      state: text("state", { enum: ["pending", "published", "dead"] })
        .notNull()
        .default("pending"),
      /** Publication attempts so far; also the fence that tells a relay its claim is still its own. */
      attempts: integer("attempts").notNull().default(0),
      /** When a relay may take the event next: now for a new one, after a backoff, or when a claim's lease ends. */
      availableAt: timestamp("available_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
      lastError: text("last_error"),
      createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
      publishedAt: timestamp("published_at", { withTimezone: true, precision: 3 }),
    },
    (columns) => [
      // What relays look for: pending events that are due, oldest first.
      index(`${name}_due_idx`).on(columns.availableAt, columns.id).where(sql`${columns.state} = 'pending'`),
      check(`${name}_state_check`, sql`${columns.state} in ('pending', 'published', 'dead')`),
    ],
  );
}

/** The record of processed events named `name`, in `schema` when given. */
export function processedEventsTable<TName extends string = "processed_events">(
  name: TName = "processed_events" as TName,
  schema?: PgSchema,
) {
  const table = (schema?.table ?? pgTable) as typeof pgTable;
  return table(
    name,
    {
      /** Who processed it: one event is processed once per consumer, so several consumers may each take it. */
      consumer: text("consumer").notNull(),
      eventId: text("event_id").notNull(),
      processedAt: timestamp("processed_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    },
    (columns) => [
      primaryKey({ name: `${name}_pkey`, columns: [columns.consumer, columns.eventId] }),
      // Retention: purging walks only what is old enough.
      index(`${name}_processed_at_idx`).on(columns.processedAt),
    ],
  );
}

/** The outbox under its default name, `outbox_events`. */
export const outboxEvents = outboxEventsTable();
/** The processed events under their default name, `processed_events`. */
export const processedEvents = processedEventsTable();

/** A table of outbox events, made by `outboxEventsTable(name)`: the relay's and `enqueue`'s `table` option. */
export type OutboxEventsTable = ReturnType<typeof outboxEventsTable<string>>;
/** A table of processed events, made by `processedEventsTable(name)`: `processOnce`'s `table` option. */
export type ProcessedEventsTable = ReturnType<typeof processedEventsTable<string>>;

/** What a purge of one of these tables takes: the database, the cut-off, and optionally the table and batch. */
export interface PurgeOptions<TTable> {
  db: AnyPgDatabase;
  /** Rows older than this go, in ms since the epoch. */
  before: number;
  /** The table, when it is not the default one. */
  table?: TTable;
  /** Rows deleted per statement. Default 1,000. */
  batchSize?: number;
}
