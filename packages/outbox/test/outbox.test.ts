/**
 * The outbox, its relay and processOnce against a real PostgreSQL: events written in a transaction exist only if
 * it committed; relays side by side publish every event, retry failures after a backoff and give up into a dead
 * state that can be retried; consumers that receive every event twice still take effect once.
 */
import { gate, openPostgres } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createOutbox,
  createRelay,
  OutboxKeyReusedError,
  OutboxPayloadError,
  outboxEventsTable,
  type PublishedEvent,
  processOnce,
  purgeProcessedEvents,
  purgePublishedEvents,
  retryDeadEvents,
} from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
type Tx = Parameters<Parameters<typeof database.db.transaction>[0]>[0];

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 8 });
  await database.query("create table sent (id serial primary key, event_key text not null)");
});
afterAll(() => database.close());

/** A clock the test moves by hand. */
function clock(startMs = Date.parse("2026-11-30T12:00:00Z")) {
  let nowMs = startMs;
  return {
    now: () => nowMs,
    advance(ms: number) {
      nowMs += ms;
    },
  };
}

const eventsWithTopic = (topic: string) =>
  database.query<{ key: string; state: string; attempts: number; last_error: string | null; payload: string }>(
    "select key, state, attempts, last_error, payload from outbox_events where topic = $1 order by id",
    [topic],
  );

describe("enqueue", () => {
  it("writes an event only when its transaction commits", async () => {
    const outbox = createOutbox();
    const topic = `order.placed.${globalThis.crypto.randomUUID()}`;
    await database.db.transaction(async (tx) => {
      await outbox.enqueue({ tx }, { topic, payload: { orderId: 1 }, key: `${topic}:kept` });
    });
    await database.db
      .transaction(async (tx) => {
        await outbox.enqueue({ tx }, { topic, payload: { orderId: 2 }, key: `${topic}:rolled-back` });
        throw new Error("the order failed");
      })
      .catch(() => {});
    expect((await eventsWithTopic(topic)).map((event) => event.key)).toEqual([`${topic}:kept`]);
  });

  it("stores an event once per key, and derives distinct keys for a call's events of one topic", async () => {
    const outbox = createOutbox();
    const topic = `mail.${globalThis.crypto.randomUUID()}`;
    // Each run of the call has its own ctx.idempotency, with a subKey derived from the same call key.
    const run = async () => {
      const subKey = (name: string) => `call-1:${name}`;
      return database.db.transaction(async (tx) => [
        await outbox.enqueue({ tx, subKey }, { topic, payload: { to: "a" } }),
        await outbox.enqueue({ tx, subKey }, { topic, payload: { to: "b" } }),
      ]);
    };
    const first = await run();
    // The same call run again (a replayed job, a lease-mode retry) enqueues the same keys: nothing new is stored.
    const again = await run();
    expect(first.map((event) => event.enqueued)).toEqual([true, true]);
    expect(new Set(first.map((event) => event.key)).size).toBe(2);
    expect(again).toEqual(first.map((event) => ({ ...event, enqueued: false })));
    expect((await eventsWithTopic(topic)).map((event) => JSON.parse(event.payload))).toEqual([
      { to: "a" },
      { to: "b" },
    ]);
  });

  it.each([
    ["a bigint", { amount: 10n }, "payload.amount is a bigint"],
    ["a function", { send: () => {} }, "payload.send is a function"],
    ["undefined", { note: undefined }, "payload.note is undefined"],
    ["a symbol key", { [Symbol("internal")]: 1 }, "payload is an object with symbol keys"],
    ["an array with a named property", Object.assign([1], { extra: 2 }), "payload is an array with holes or named"],
    ["deep nesting", Array.from({ length: 200 }).reduce<unknown>((inner) => ({ inner }), {}), "nested more than 100"],
    ["NaN", { total: Number.NaN }, "payload.total is NaN"],
    ["a Map", { lines: new Map() }, "payload.lines is a Map instance"],
    [
      "a cycle",
      (() => {
        const order: Record<string, unknown> = {};
        order.self = order;
        return order;
      })(),
      "payload.self is a reference back",
    ],
  ])(
    "refuses a payload with %s at enqueue, naming where, and the transaction keeps nothing",
    async (_, payload, where) => {
      const outbox = createOutbox();
      const topic = `bad.${globalThis.crypto.randomUUID()}`;
      const failed = database.db.transaction(async (tx) => {
        await tx.execute(sql`insert into sent (event_key) values (${topic})`);
        await outbox.enqueue({ tx }, { topic, payload, key: topic });
      });
      await expect(failed).rejects.toThrow(OutboxPayloadError);
      await expect(failed).rejects.toThrow(where);
      expect(await eventsWithTopic(topic)).toEqual([]);
      expect(await database.query("select 1 from sent where event_key = $1", [topic])).toEqual([]);
    },
  );

  it("refuses loudly a key that another topic's event has, in the same transaction or a later one", async () => {
    const outbox = createOutbox();
    const orderId = globalThis.crypto.randomUUID();
    const email = `order.email.${orderId}`;
    const warehouse = `order.warehouse.${orderId}`;
    const together = database.db.transaction(async (tx) => {
      await outbox.enqueue({ tx }, { topic: email, payload: { orderId }, key: orderId });
      await outbox.enqueue({ tx }, { topic: warehouse, payload: { orderId }, key: orderId });
    });
    await expect(together).rejects.toThrow(OutboxKeyReusedError);
    await expect(together).rejects.toThrow(`such as "${warehouse}:${orderId}"`);
    expect(await eventsWithTopic(email)).toEqual([]);

    await database.db.transaction((tx) => outbox.enqueue({ tx }, { topic: email, payload: {}, key: orderId }));
    const later = database.db.transaction((tx) =>
      outbox.enqueue({ tx }, { topic: warehouse, payload: {}, key: orderId }),
    );
    await expect(later).rejects.toMatchObject({ name: "OutboxKeyReusedError", existingTopic: email, topic: warehouse });
    // The same topic again is the same event: stored once, without an error.
    expect(
      await database.db.transaction((tx) => outbox.enqueue({ tx }, { topic: email, payload: {}, key: orderId })),
    ).toEqual({ key: orderId, enqueued: false });
    expect((await eventsWithTopic(email)).length + (await eventsWithTopic(warehouse)).length).toBe(1);
  });

  it("says what is missing without a transaction, or without a key outside a protected call", async () => {
    const outbox = createOutbox();
    await expect(outbox.enqueue({ tx: undefined }, { topic: "t", payload: {} })).rejects.toThrow(/needs a transaction/);
    await expect(database.db.transaction((tx) => outbox.enqueue({ tx }, { topic: "t", payload: {} }))).rejects.toThrow(
      /needs a key/,
    );
  });
});

describe("the relay", () => {
  it("retries a failed publish after its backoff, gives up into dead, and publishes once retried by hand", async () => {
    const time = clock();
    const outbox = createOutbox({ now: time.now });
    const topic = `flaky.${globalThis.crypto.randomUUID()}`;
    await database.db.transaction((tx) => outbox.enqueue({ tx }, { topic, payload: { n: 1 }, key: topic }));
    let failing = true;
    const attempts: number[] = [];
    const relay = createRelay({
      db: database.db,
      now: time.now,
      maxAttempts: 3,
      retryDelayMs: (attempt) => attempt * 1_000,
      publish: (event) => {
        if (event.topic !== topic) return;
        attempts.push(event.attempt);
        if (failing) throw new Error("the broker is down");
      },
    });

    await relay.runOnce();
    expect(await eventsWithTopic(topic)).toMatchObject([{ state: "pending", attempts: 1 }]);
    await relay.runOnce(); // not due yet: 1 s of backoff after the first attempt
    expect(attempts).toEqual([1]);
    time.advance(1_000);
    await relay.runOnce();
    time.advance(2_000);
    await relay.runOnce();
    expect(attempts).toEqual([1, 2, 3]);
    expect(await eventsWithTopic(topic)).toMatchObject([
      { state: "dead", attempts: 3, last_error: "Error: the broker is down" },
    ]);
    time.advance(60_000);
    await relay.runOnce();
    expect(attempts).toEqual([1, 2, 3]);

    failing = false;
    const [retried] = await database.query<{ id: number }>("select id from outbox_events where key = $1", [topic]);
    expect(await retryDeadEvents({ db: database.db, ids: [Number(retried?.id)], now: time.now })).toEqual([
      Number(retried?.id),
    ]);
    await relay.runOnce();
    expect(attempts).toEqual([1, 2, 3, 1]);
    expect(await eventsWithTopic(topic)).toMatchObject([{ state: "published", attempts: 1, last_error: null }]);
  });

  it("publishes an event again once the lease of a relay that never marked it has ended", async () => {
    const time = clock();
    const outbox = createOutbox({ now: time.now });
    const topic = `lease.${globalThis.crypto.randomUUID()}`;
    await database.db.transaction((tx) => outbox.enqueue({ tx }, { topic, payload: {}, key: topic }));
    const { opened: stuck, open: unstick } = gate();
    const published: string[] = [];
    const stalled = createRelay({
      db: database.db,
      now: time.now,
      leaseMs: 30_000,
      publish: async (event) => {
        if (event.topic !== topic) return;
        published.push("stalled");
        await stuck;
      },
    });
    const healthy = createRelay({
      db: database.db,
      now: time.now,
      publish: (event) => {
        if (event.topic === topic) published.push("healthy");
      },
    });

    const stalling = stalled.runOnce();
    while (published.length === 0) await new Promise((resolve) => setImmediate(resolve));
    await healthy.runOnce(); // leased to the stalled relay: not taken
    expect(published).toEqual(["stalled"]);
    time.advance(30_000);
    await healthy.runOnce();
    expect(published).toEqual(["stalled", "healthy"]);
    unstick();
    await stalling;
    expect(await eventsWithTopic(topic)).toMatchObject([{ state: "published", attempts: 2 }]);
  });

  it("keeps going through an observer that throws", async () => {
    const outbox = createOutbox();
    const topic = `observed.${globalThis.crypto.randomUUID()}`;
    await database.db.transaction((tx) => outbox.enqueue({ tx }, { topic, payload: {}, key: topic }));
    const relay = createRelay({
      db: database.db,
      publish: () => {},
      onEvent: () => {
        throw new Error("the metrics exporter broke");
      },
    });
    while ((await relay.runOnce()).published > 0) {
      // drains every pending event, this one included
    }
    expect(await eventsWithTopic(topic)).toMatchObject([{ state: "published" }]);
  });
});

describe("the relay, when publishing goes wrong", () => {
  it("parks as dead an event whose relays all died or hung, and the late relay's mark is refused", async () => {
    const time = clock();
    const outbox = createOutbox({ now: time.now });
    const topic = `exhausted.${globalThis.crypto.randomUUID()}`;
    await database.db.transaction((tx) => outbox.enqueue({ tx }, { topic, payload: {}, key: topic }));
    const { opened: stuck, open: unstick } = gate();
    const { opened: publishing, open: publishStarted } = gate();
    const seen: string[] = [];
    const hung = createRelay({
      db: database.db,
      now: time.now,
      publishTimeoutMs: 60 * 60_000,
      leaseMs: 2 * 60 * 60_000,
      onEvent: (event) => seen.push(event.type),
      publish: async (event) => {
        if (event.topic !== topic) return;
        publishStarted();
        await stuck;
      },
    });
    const hanging = hung.runOnce();
    // The clock moves only once the relay is inside publish: moved earlier, the relay would see its lease as spent
    // and not publish at all.
    await publishing;
    expect(await eventsWithTopic(topic)).toMatchObject([{ attempts: 1 }]);

    time.advance(2 * 60 * 60_000);
    const dead: string[] = [];
    const next = createRelay({
      db: database.db,
      now: time.now,
      maxAttempts: 1,
      publish: () => {},
      onEvent: (event) => {
        if (event.type === "dead") dead.push(event.event.key);
      },
    });
    await next.runOnce();
    expect(dead).toContain(topic);
    expect(await eventsWithTopic(topic)).toMatchObject([
      { state: "dead", last_error: "Claimed 1 times and never marked: each relay that took it died or hung." },
    ]);
    unstick();
    await hanging;
    expect(seen).toContain("lease_lost");
    expect(await eventsWithTopic(topic)).toMatchObject([{ state: "dead" }]);
  });

  it("fails an attempt that outlasts publishTimeoutMs, and one whose stored payload does not parse, and goes on", async () => {
    const topic = `timeouts.${globalThis.crypto.randomUUID()}`;
    await database.query(
      "insert into outbox_events (topic, key, payload) values ($1, $2, 'not json'), ($1, $3, '{}')",
      [topic, `${topic}:unparseable`, `${topic}:hangs`],
    );
    const outbox = createOutbox();
    await database.db.transaction((tx) => outbox.enqueue({ tx }, { topic, payload: {}, key: `${topic}:fine` }));
    const aborted: boolean[] = [];
    const relay = createRelay({
      db: database.db,
      publishTimeoutMs: 1,
      publish: (event, { signal }) => {
        if (event.key !== `${topic}:hangs`) return;
        return new Promise<void>((resolve) => {
          signal.addEventListener("abort", () => {
            aborted.push(signal.aborted);
            resolve();
          });
        });
      },
    });
    await relay.runOnce(); // every due event: this test's three, and the few earlier tests left pending
    expect(aborted).toEqual([true]);
    expect(
      Object.fromEntries((await eventsWithTopic(topic)).map((event) => [event.key, [event.state, event.last_error]])),
    ).toEqual({
      [`${topic}:unparseable`]: ["pending", expect.stringMatching(/SyntaxError/)],
      [`${topic}:hangs`]: ["pending", "Error: publish did not finish within 1 ms"],
      [`${topic}:fine`]: ["published", null],
    });
  });
});

describe("the relay, when its lease runs short", () => {
  it("charges an attempt only for events it handed to publish: those it had no time for go back at once", async () => {
    await database.query("create table lease_budget_events (like outbox_events including all)");
    const table = outboxEventsTable("lease_budget_events");
    const time = clock();
    const outbox = createOutbox({ table, now: time.now });
    const topic = `budget.${globalThis.crypto.randomUUID()}`;
    await database.db.transaction(async (tx) => {
      for (let n = 0; n < 10; n++) await outbox.enqueue({ tx }, { topic, payload: { n }, key: `${topic}:${n}` });
    });
    const published: number[] = [];
    const relay = createRelay({
      db: database.db,
      table,
      now: time.now,
      batchSize: 10,
      leaseMs: 400,
      publishTimeoutMs: 200,
      maxAttempts: 1,
      // Each publish takes 60 ms: four fit in the batch's lease before none may start.
      publish: (event) => {
        published.push((event.payload as { n: number }).n);
        time.advance(60);
      },
    });
    const first = await relay.runOnce();
    expect(first).toEqual({ published: 4, failed: 0, dead: 0 });
    const rows = await database.query<{ state: string; attempts: number }>(
      "select state, attempts from lease_budget_events order by id",
    );
    expect(rows.map((row) => [row.state, row.attempts])).toEqual([
      ...Array.from({ length: 4 }, () => ["published", 1]),
      ...Array.from({ length: 6 }, () => ["pending", 0]),
    ]);
    // Given back due at once: the next batches publish them, and none dies unpublished.
    for (let batch = 0; batch < 3 && published.length < 10; batch++) await relay.runOnce();
    expect(published).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await database.query("select 1 from lease_budget_events where state <> 'published'")).toEqual([]);
  });
});

describe("enqueue in a savepoint of the call's transaction", () => {
  it("numbers its events with the call's others, so none is lost to a repeated key", async () => {
    const outbox = createOutbox();
    const topic = `savepoint.${globalThis.crypto.randomUUID()}`;
    const call = { subKey: (name: string) => `${topic}:${name}` };
    await database.db.transaction(async (tx) => {
      await outbox.enqueue({ tx, ...call }, { topic, payload: { n: 1 } });
      await tx.transaction((savepoint) => outbox.enqueue({ tx: savepoint, ...call }, { topic, payload: { n: 2 } }));
    });
    expect((await eventsWithTopic(topic)).map((event) => JSON.parse(event.payload))).toEqual([{ n: 1 }, { n: 2 }]);
  });
});

describe("two relays and two workers over 1,000 events", () => {
  it("takes effect once per event although every event is delivered to both workers", async () => {
    const outbox = createOutbox();
    const topic = `bulk.${globalThis.crypto.randomUUID()}`;
    const total = 1_000;
    for (let start = 0; start < total; start += 100) {
      await database.db.transaction(async (tx) => {
        for (let n = start; n < start + 100; n++) {
          await outbox.enqueue({ tx }, { topic, payload: { n }, key: `${topic}:${n}` });
        }
      });
    }
    // A broker that delivers at least once: every message reaches both workers.
    const queues: PublishedEvent[][] = [[], []];
    const publish = (event: PublishedEvent) => {
      if (event.topic !== topic) return;
      for (const queue of queues) queue.push(event);
    };
    const relays = [
      createRelay({ db: database.db, publish, batchSize: 25, idleMs: 5 }),
      createRelay({ db: database.db, publish, batchSize: 25, idleMs: 5 }),
    ];
    for (const relay of relays) relay.start();
    let effects = 0;
    let skipped = 0;
    const worker = async (queue: PublishedEvent[]) => {
      for (let handled = 0; handled < total; ) {
        const event = queue.shift();
        if (!event) {
          await new Promise((resolve) => setTimeout(resolve, 5));
          continue;
        }
        const outcome = await processOnce(
          { db: database.db, consumer: "mailer", eventId: event.key },
          async (tx: Tx) => {
            await tx.execute(sql`insert into sent (event_key) values (${event.key})`);
            effects++;
          },
        );
        if (!outcome.processed) skipped++;
        handled++;
      }
    };
    await Promise.all(queues.map(worker));
    await Promise.all(relays.map((relay) => relay.stop()));

    const [counts] = await database.query<{ rows: number; keys: number }>(
      "select count(*)::int as rows, count(distinct event_key)::int as keys from sent where event_key like $1",
      [`${topic}:%`],
    );
    expect(counts).toEqual({ rows: total, keys: total });
    expect(effects).toBe(total);
    expect(skipped).toBe(total);
    const states = await database.query<{ state: string; n: number }>(
      "select state, count(*)::int as n from outbox_events where topic = $1 group by state",
      [topic],
    );
    expect(states).toEqual([{ state: "published", n: total }]);
  }, 60_000);
});

/** How many sessions of this test's database are waiting for a lock. */
async function blockedOnLocks(): Promise<number> {
  const [row] = await database.query<{ n: number }>(
    "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
  );
  return row?.n ?? 0;
}

describe("processOnce", () => {
  it("runs a redelivered event again only when its first run rolled back", async () => {
    const eventId = globalThis.crypto.randomUUID();
    const options = { db: database.db, consumer: "ledger", eventId };
    const write = (tx: Tx) => tx.execute(sql`insert into sent (event_key) values (${eventId})`);
    await expect(
      processOnce(options, async (tx) => {
        await write(tx);
        throw new Error("crashed mid-handler");
      }),
    ).rejects.toThrow("crashed mid-handler");
    const writeAnd = (value: string) => async (tx: Tx) => {
      await write(tx);
      return value;
    };
    expect(await processOnce(options, writeAnd("done"))).toEqual({
      processed: true,
      value: "done",
    });
    expect(await processOnce(options, writeAnd("twice"))).toEqual({ processed: false });
    expect(await database.query("select 1 from sent where event_key = $1", [eventId])).toHaveLength(1);
  });

  it("lets a delivery that arrives while the first still runs wait for it, then skip", async () => {
    const eventId = globalThis.crypto.randomUUID();
    const options = { db: database.db, consumer: "ledger", eventId };
    const { opened: holding, open: hold } = gate();
    const { opened: released, open: release } = gate();
    const first = processOnce(options, async () => {
      hold();
      await released;
      return "first";
    });
    await holding;
    const second = processOnce(options, async () => "second");
    // Released only once the second delivery is blocked on the first one's row.
    while ((await blockedOnLocks()) === 0) await new Promise((resolve) => setImmediate(resolve));
    release();
    expect(await first).toEqual({ processed: true, value: "first" });
    expect(await second).toEqual({ processed: false });
  });

  it("gives up on a delivery stuck behind a hung one after lockTimeoutMs, with nothing done, and keeps the setting", async () => {
    const eventId = globalThis.crypto.randomUUID();
    const options = { db: database.db, consumer: "ledger", eventId };
    const { opened: holding, open: hold } = gate();
    const { opened: released, open: release } = gate();
    const hung = processOnce(options, async (tx) => {
      hold();
      await released;
      // The caller's own lock_timeout is back in force inside the handler.
      return (await tx.execute<{ lock_timeout: string }>(sql`show lock_timeout`))[0]?.lock_timeout;
    });
    await holding;
    let ran = false;
    await expect(
      processOnce({ ...options, lockTimeoutMs: 50 }, async () => {
        ran = true;
      }),
    ).rejects.toThrow(`ledger is still processing ${eventId} in another delivery after 50 ms`);
    expect(ran).toBe(false);
    release();
    expect(await hung).toEqual({ processed: true, value: "0" });
    expect(await processOnce(options, async () => "again")).toEqual({ processed: false });
  });

  it("purges records and published events past their retention", async () => {
    const time = clock(Date.parse("2020-01-01T00:00:00Z"));
    const eventId = globalThis.crypto.randomUUID();
    await processOnce({ db: database.db, consumer: "old", eventId, now: time.now }, async () => {});
    expect(await purgeProcessedEvents({ db: database.db, before: time.now() + 1 })).toBeGreaterThanOrEqual(1);
    expect(await database.query("select 1 from processed_events where event_id = $1", [eventId])).toEqual([]);

    const outbox = createOutbox({ now: time.now });
    const topic = `old.${globalThis.crypto.randomUUID()}`;
    await database.db.transaction((tx) => outbox.enqueue({ tx }, { topic, payload: {}, key: topic }));
    const relay = createRelay({ db: database.db, now: time.now, publish: () => {} });
    while ((await relay.runOnce()).published > 0) {
      // drains every event due by then
    }
    expect(await purgePublishedEvents({ db: database.db, before: time.now() + 1 })).toBeGreaterThanOrEqual(1);
    expect(await eventsWithTopic(topic)).toEqual([]);
  });
});
