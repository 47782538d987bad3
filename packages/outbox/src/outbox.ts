/**
 * The transactional outbox. A procedure writes the events its work implies (the confirmation email, the
 * warehouse message) into the outbox in the same transaction as the work itself, so an event exists if and only if
 * that work committed: a rolled-back order never sends its email, a committed one never loses it. A relay then
 * publishes what is pending to the app's own `publish` function, at least once: an event published just before a
 * crash is published again, so its consumers de-duplicate (`processOnce`).
 *
 *   enqueue (in the procedure's transaction) ─▶ pending ─▶ relay claims a batch (lease) ─▶ publish ─┬▶ published
 *                                                  ▲                                               │ failed
 *                                                  └──────── after a backoff, while attempts last ◀┤
 *                                                                                                  ▼
 *                                          retryDeadEvents(), by hand ◀──────────────────────────────── dead
 */

import { notPlainJson } from "@idemkit/core/internal";
import { named, qualifiedName, type Row, run } from "@idemkit/drizzle/internal";
import { type OutboxEventsTable, outboxEvents } from "./outbox-schema.js";

/** What an event is enqueued with. */
export interface OutboxEventInput {
  /** What the event is about, for the relay's `publish` to route on: `order.placed`. */
  topic: string;
  /** Plain JSON: objects, arrays, strings, finite numbers, booleans, null (and dates, as ISO strings). */
  payload: unknown;
  /**
   * The event's de-duplication key, unique across every topic (it is what a consumer de-duplicates by): enqueued
   * again under the same key for the same topic (a retried job, a replayed call), it is stored once; under a key
   * another topic's event already has, `enqueue` throws {@link OutboxKeyReusedError}. Default: derived from the
   * protected call's key, the topic and how many events of that topic the call enqueued before, so a call's events
   * are the same on every run of it.
   */
  key?: string;
}

/**
 * Where an event is written: the protected procedure's `ctx.idempotency` (its transaction and its call's key), or
 * any `{ tx }` of the app's own with an explicit `key`.
 */
export interface OutboxTarget {
  /** The transaction the event is written in: the call's, so the event exists only if the call committed. */
  tx: unknown;
  /** Derives the event's key from the call's, so a retried call writes the same event once. */
  subKey?: (name: string) => string;
}

/** What `createOutbox` takes: the table, when not the default. */
export interface OutboxOptions {
  /** The outbox table, when it is not the default `outboxEvents`: one made with `outboxEventsTable(name, schema)`. */
  table?: OutboxEventsTable;
  /** A clock in ms since the epoch, for tests that move time; by default the database's, which every host shares. */
  now?: () => number;
}

/** An event as the relay hands it to `publish`. */
export interface PublishedEvent {
  id: number;
  topic: string;
  /** The de-duplication key: what a consumer passes to `processOnce` as the event's id. */
  key: string;
  payload: unknown;
  /** 1 on the first attempt to publish it. */
  attempt: number;
}

/** Creates the outbox: `enqueue` from procedures. */
export function createOutbox({ table = outboxEvents, now }: OutboxOptions = {}) {
  const statements = outboxStatements(qualifiedName(table));
  /**
   * How many events of each topic a call has enqueued without a key of its own, for the default keys: counted per
   * call (its `subKey`), so events enqueued through a savepoint of its transaction are numbered with the rest.
   */
  const enqueuedByCall = new WeakMap<object, Map<string, number>>();

  return {
    /**
     * Writes `event` in `target`'s transaction: it is published once that transaction commits, and never if it
     * rolls back. The payload is checked here, so a payload that cannot be stored fails the procedure now with a
     * clear error instead of the relay later. Returns the event's key and whether it was new (false: an event of
     * this topic with that key was enqueued before, and this one was not stored again). A key that an event of
     * another topic already has is refused with {@link OutboxKeyReusedError}: storing neither would lose an event.
     */
    async enqueue(target: OutboxTarget, event: OutboxEventInput): Promise<{ key: string; enqueued: boolean }> {
      const { tx } = target;
      if (typeof tx !== "object" || tx === null) {
        throw new TypeError(
          "outbox.enqueue() needs a transaction: ctx.idempotency in atomic mode, or { tx, key } with a " +
            "transaction of your own (in lease mode ctx.idempotency.tx is undefined).",
        );
      }
      if (typeof event.topic !== "string" || event.topic.length === 0) {
        throw new TypeError("outbox.enqueue(): the topic must be a non-empty string.");
      }
      const payload = serializePayload(event.topic, event.payload);
      const key = event.key ?? defaultKey(target.subKey, event.topic);
      const executor = tx as Parameters<typeof run>[0];
      const [row] = await run(executor, statements.ENQUEUE, [event.topic, key, payload, now?.() ?? null]);
      if (row?.id != null) return { key, enqueued: true };
      // The event that holds the key committed after this statement's snapshot when it is not seen: read it again.
      const topic = row?.existing_topic ?? (await run(executor, statements.TOPIC_OF, [key]))[0]?.topic;
      if (topic !== undefined && topic !== event.topic) throw new OutboxKeyReusedError(key, String(topic), event.topic);
      return { key, enqueued: false };
    },
  };

  function defaultKey(subKey: OutboxTarget["subKey"], topic: string): string {
    if (!subKey) {
      throw new TypeError(
        `outbox.enqueue(): the ${topic} event needs a key, as its transaction is not a protected call's ` +
          "(pass ctx.idempotency, or a key of your own).",
      );
    }
    const counts = enqueuedByCall.get(subKey) ?? new Map<string, number>();
    enqueuedByCall.set(subKey, counts);
    const before = counts.get(topic) ?? 0;
    counts.set(topic, before + 1);
    return subKey(JSON.stringify(["outbox", topic, before]));
  }
}

/** The outbox `createOutbox` makes: `enqueue` an event in a transaction. */
export type Outbox = ReturnType<typeof createOutbox>;

/**
 * Thrown by `enqueue` for a key that an event of another topic already has. A key names one event, whatever its
 * topic: consumers de-duplicate by it, so the two events cannot share it, and dropping either would lose it.
 */
export class OutboxKeyReusedError extends Error {
  override readonly name = "OutboxKeyReusedError";
  constructor(
    readonly key: string,
    readonly existingTopic: string,
    readonly topic: string,
  ) {
    super(
      `outbox.enqueue(): the key ${JSON.stringify(key)} belongs to a ${existingTopic} event already, so a ${topic} ` +
        `event cannot have it too. Give each topic's events keys of their own, such as ${JSON.stringify(`${topic}:${key}`)}.`,
    );
  }
}

/** Thrown by `enqueue` for a payload that is not plain JSON: where in it, and what was found there. */
export class OutboxPayloadError extends TypeError {
  override readonly name = "OutboxPayloadError";
}

/**
 * The payload as JSON text, refusing what JSON.stringify would silently drop or change (undefined, functions,
 * symbols, NaN and infinities, Maps and Sets, class instances) as well as what it throws on (bigints, cycles).
 */
function serializePayload(topic: string, payload: unknown): string {
  const found = notPlainJson(payload, { name: "payload", undefinedMembers: false, dates: true });
  if (found) {
    throw new OutboxPayloadError(
      `The ${topic} event's payload cannot be stored as JSON: ${found.path} is ${found.what}. Convert it to plain ` +
        "JSON (strings, finite numbers, booleans, null, arrays, plain objects) before enqueueing.",
    );
  }
  return JSON.stringify(payload);
}

/** The outbox's statements over `table` (the qualified, quoted name). */
export function outboxStatements(table: string) {
  /** A time given in ms since the epoch. */
  const at = (param: string) => `to_timestamp(${param}::float8 / 1000)`;
  /** Now: the injected clock's time when one was given (a test's), else the database's own clock, shared by all hosts. */
  const clock = (param: string) => `coalesce(${at(param)}, statement_timestamp())`;
  const statements = {
    /**
     * $1 topic, $2 key, $3 payload, $4 now. One row back: `id` when stored; else the topic of the event that has the
     * key, as this statement's snapshot sees it (null when that event committed after the snapshot).
     */
    ENQUEUE: {
      name: "idemkit_outbox_enqueue",
      steps: {
        inserted: `insert into ${table} (topic, key, payload, available_at, created_at)
          values ($1::text, $2::text, $3::text, ${clock("$4")}, ${clock("$4")})
          on conflict (key) do nothing returning id`,
      },
      text: `select (select id from inserted) as id,
             (select topic from ${table} where key = $2::text and not exists (select 1 from inserted)) as existing_topic`,
      columns: ["id", "existing_topic"],
    },
    /** $1 key. The topic of the event that has it. */
    TOPIC_OF: {
      name: "idemkit_outbox_topic_of",
      text: `select topic from ${table} where key = $1::text`,
      columns: ["topic"],
    },
    /**
     * $1 now, $2 max attempts. Due events that were claimed that many times and never marked: dead, and returned.
     */
    EXHAUSTED: {
      name: "idemkit_outbox_exhausted",
      steps: {
        exhausted: `select id from ${table}
          where state = 'pending' and available_at <= ${clock("$1")} and attempts >= $2::int
          for update skip locked`,
      },
      text: `update ${table} as event set state = 'dead',
        last_error = 'Claimed ' || event.attempts || ' times and never marked: each relay that took it died or hung.'
      from exhausted where event.id = exhausted.id
      returning event.id, event.topic, event.key, event.attempts, event.last_error`,
      columns: ["id", "topic", "key", "attempts", "last_error"],
    },
    /**
     * $1 now, $2 batch size, $3 lease ms, $4 max attempts. Takes the due events, oldest first, skipping those
     * another relay is taking at this moment; each one's lease makes it this relay's until then, and its attempt
     * count is the fence. `waited_ms` is how long ago the event was enqueued (its `created_at`), on the database's clock.
     */
    CLAIM: {
      name: "idemkit_outbox_claim",
      steps: {
        due: `select id from ${table}
          where state = 'pending' and available_at <= ${clock("$1")} and attempts < $4::int
          order by available_at, id limit $2::int for update skip locked`,
      },
      text: `update ${table} as event set attempts = event.attempts + 1, available_at = ${clock("$1")} + $3::float8 * interval '1 millisecond'
      from due where event.id = due.id
      returning event.id, event.topic, event.key, event.payload, event.attempts,
        extract(epoch from ${clock("$1")} - event.created_at)::float8 * 1000 as waited_ms`,
      columns: ["id", "topic", "key", "payload", "attempts", "waited_ms"],
    },
    /**
     * $1 ids, $2 the attempts they were claimed at, $3 now. Gives back events a relay claimed and did not hand to
     * publish (its lease had no time left for them): due again at once, and the claim uncharged.
     */
    GIVE_BACK: {
      name: "idemkit_outbox_give_back",
      text: `update ${table} as event set attempts = event.attempts - 1, available_at = ${clock("$3")}
      from unnest($1::bigint[], $2::int[]) as given(id, attempt)
      where event.id = given.id and event.attempts = given.attempt and event.state = 'pending'
      returning event.id`,
      columns: ["id"],
    },
    /** $1 id, $2 the attempt that published it, $3 now. */
    PUBLISHED: {
      name: "idemkit_outbox_published",
      text: `update ${table} set state = 'published', published_at = ${clock("$3")}, last_error = null
      where id = $1::bigint and attempts = $2::int and state = 'pending' returning id`,
      columns: ["id"],
    },
    /** $1 id, $2 the attempt that failed, $3 now, $4 max attempts, $5 the error, $6 the pause before the next, ms. */
    FAILED: {
      name: "idemkit_outbox_failed",
      text: `update ${table}
      set state = case when attempts >= $4::int then 'dead' else 'pending' end,
          available_at = ${clock("$3")} + $6::float8 * interval '1 millisecond',
          last_error = $5::text
      where id = $1::bigint and attempts = $2::int and state = 'pending' returning state`,
      columns: ["state"],
    },
    /** $1 now, $2 the ids, or null for every dead event. */
    RETRY_DEAD: {
      name: "idemkit_outbox_retry_dead",
      text: `update ${table} set state = 'pending', attempts = 0, available_at = ${clock("$1")}, last_error = null
      where state = 'dead' and ($2::bigint[] is null or id = any($2::bigint[])) returning id`,
      columns: ["id"],
    },
    /** $1 published before (ms), $2 batch size. */
    PURGE: {
      name: "idemkit_outbox_purge",
      steps: {
        doomed: `select id from ${table} where state = 'published' and published_at < ${at("$1")} limit $2::int`,
        deleted: `delete from ${table} as event using doomed where event.id = doomed.id returning 1`,
      },
      text: "select count(*)::int as deleted from deleted",
      columns: ["deleted"],
    },
  };
  return named(statements);
}

/** A claimed row as the relay hands it on; its payload parsed unless `withPayload` is false. */
export function toPublishedEvent(row: Row, withPayload = true): PublishedEvent {
  return {
    id: Number(row.id),
    topic: String(row.topic),
    key: String(row.key),
    payload: withPayload ? JSON.parse(String(row.payload)) : undefined,
    attempt: Number(row.attempts),
  };
}
