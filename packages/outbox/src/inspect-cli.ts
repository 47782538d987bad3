#!/usr/bin/env node
/**
 * `idemkit-outbox`: what an operator asks of the outbox in PostgreSQL, from the database at DATABASE_URL:
 *
 *   idemkit-outbox dead [--topic T] [--limit N]   the dead events: out of attempts, retried only by hand
 *   idemkit-outbox requeue ID... | --all          puts dead events back to pending, with fresh attempts
 *   idemkit-outbox lag                            how far behind the relays are: pending, oldest, dead
 *
 * `--json` prints one JSON document; `--table` names an outbox table other than `outbox_events`. Exit codes: 0 done,
 * 1 the database failed, 2 a usage error, 3 requeue found no dead event to put back. Purging is
 * `idemkit-outbox-purge`.
 */
import { wrongCount } from "@idemkit/command-line";
import { type Args, type InspectReport, runInspectCommand, type SqlClient } from "@idemkit/drizzle/internal";
import { outboxEventsTable } from "./outbox-schema.js";
import { retryDeadEvents } from "./relay.js";

const USAGE = `usage: DATABASE_URL=postgres://… idemkit-outbox <command> [options]

  dead [--topic T] [--limit N]   the dead events (out of attempts), newest first: id, topic, key, attempts, error
  requeue ID... | --all          puts those dead events (or all of them) back to pending, with fresh attempts:
                                 once the cause is fixed, the relays publish them again
  lag                            pending events and the age of the oldest, dead events, published in the last hour

  --json          one JSON document instead of lines
  --table NAME    the outbox table (default outbox_events; schema.table for another schema)

Exit codes: 0 done, 1 the database failed, 2 a usage error, 3 requeue found nothing to put back.
Purge: idemkit-outbox-purge. Needs the "postgres" package (npm install postgres).`;

const OPTIONS = {
  topic: { type: "string" },
  limit: { type: "string", default: "50" },
  all: { type: "boolean" },
} as const;
type Given = Args<typeof OPTIONS>;

async function dead(client: SqlClient, { values, tables }: Given): Promise<InspectReport> {
  const rows = await client.unsafe(
    `select id, topic, key, attempts, last_error,
       extract(epoch from now() - created_at)::float8 as age_s
     from ${tables.table.sql} where state = 'dead' and ($1::text is null or topic = $1)
     order by id desc limit $2::int`,
    [values.topic ?? null, Number(values.limit)],
  );
  const events = rows.map((row) => ({
    id: Number(row.id),
    topic: String(row.topic),
    key: String(row.key),
    attempts: Number(row.attempts),
    lastError: row.last_error === null ? null : String(row.last_error),
    ageS: Math.round(Number(row.age_s)),
  }));
  return {
    document: events,
    found: true,
    lines:
      events.length === 0
        ? ["no dead event"]
        : events.map(
            (event) =>
              `#${event.id}  ${event.topic}  key ${event.key}  ${event.attempts} attempts  ${event.lastError ?? ""}`,
          ),
  };
}

async function requeue(client: SqlClient, { operands, values, tables }: Given): Promise<InspectReport> {
  const { drizzle } = await import("drizzle-orm/postgres-js");
  const requeued = (
    await retryDeadEvents({
      // The command's client is postgres.js's, which drizzle takes as it is.
      db: drizzle({ client: client as never }),
      table: tables.table.of(outboxEventsTable),
      ...(!values.all && { ids: operands.map(Number) }),
    })
  ).sort((a, b) => a - b);
  return {
    document: { requeued },
    found: requeued.length > 0,
    lines: [
      requeued.length === 0 ? "no dead event to put back" : `put back ${requeued.map((id) => `#${id}`).join(", ")}`,
    ],
  };
}

async function lag(client: SqlClient, { tables }: Given): Promise<InspectReport> {
  const [row = {}] = await client.unsafe(
    `select count(*) filter (where state = 'pending')::int as pending,
       coalesce(extract(epoch from now() - min(created_at) filter (where state = 'pending'))::float8, 0) as oldest_s,
       count(*) filter (where state = 'dead')::int as dead,
       count(*) filter (where state = 'published' and published_at >= now() - interval '1 hour')::int as published
     from ${tables.table.sql}`,
  );
  const view = {
    pending: Number(row.pending),
    oldestPendingS: Math.round(Number(row.oldest_s) * 10) / 10,
    dead: Number(row.dead),
    publishedLastHour: Number(row.published),
  };
  return {
    document: view,
    found: true,
    lines: [
      `pending ${view.pending} (the oldest ${view.oldestPendingS}s)  dead ${view.dead}  published in the last hour ${view.publishedLastHour}`,
    ],
  };
}

await runInspectCommand({
  name: "idemkit-outbox",
  usage: USAGE,
  commands: { dead, requeue, lag },
  options: OPTIONS,
  tables: { table: "outbox_events" },
  check({ command, operands, values }) {
    const wrong = wrongCount("limit", values.limit);
    if (wrong || command !== "requeue") return wrong;
    if (Boolean(values.all) === operands.length > 0) return "requeue takes the ids of dead events, or --all";
    if (operands.some((id) => !/^\d+$/.test(id))) return "requeue takes event ids: whole numbers";
    return undefined;
  },
});
