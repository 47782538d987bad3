/**
 * The outbox behind a transaction pooler (PgBouncer 1.18 in transaction mode, no prepared statements), two app
 * instances in front of it: events enqueued in the app's transactions, relayed by both instances at once, and
 * processed by both: each published once and processed once, on every driver that works there. postgres.js with its
 * defaults is refused naming `prepare: false`, never told an event was processed when nothing of it was kept.
 */

import { IdempotencyErrorCode, isIdempotencyError } from "@idemkit/core";
import {
  openPooled,
  type PooledDatabase,
  type PooledDriver,
  type RunningPgbouncer,
  startPgbouncer,
} from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createOutbox, createRelay, processOnce } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: the round runs over each driver's own database type
type AnyDb = any;

let bouncer: RunningPgbouncer;
const opened: PooledDatabase[] = [];

beforeAll(async () => {
  bouncer = await startPgbouncer(inject("postgresUrl"), { poolSize: 4 });
});
afterAll(async () => {
  await Promise.all(opened.map((database) => database.close()));
  await bouncer?.stop();
});

async function twoInstances(driver: PooledDriver, { max = 5 } = {}): Promise<PooledDatabase> {
  const database = await openPooled(inject("postgresUrl"), bouncer, driver, { max });
  opened.push(database);
  await database.query("create table notes (marker text not null)");
  return database;
}

/**
 * Ten events, each enqueued with an order note in a transaction of its own, half on each instance. A transaction
 * refused as retryable is run again, as its error says to: the first of idemkit's statements to meet the pooler
 * in an app's own transaction fails it, and idemkit sends its statements unnamed from then on.
 */
async function enqueueTen(instances: AnyDb[], topic: string): Promise<{ keys: string[]; refused: number }> {
  const outbox = createOutbox();
  let refused = 0;
  const keys = await Promise.all(
    Array.from({ length: 10 }, async (_, index) => {
      const db = instances[index % 2];
      const enqueue = () =>
        db.transaction(async (tx: AnyDb) => {
          await tx.execute(sql`insert into notes (marker) values (${`order ${index}`})`);
          return outbox.enqueue({ tx, subKey: (name) => `${topic}:${index}:${name}` }, { topic, payload: { index } });
        });
      const { key } = await enqueue().catch((error: unknown) => {
        if (!isIdempotencyError(error) || error.code !== IdempotencyErrorCode.STORE_UNAVAILABLE) throw error;
        refused++;
        return enqueue();
      });
      return key as string;
    }),
  );
  return { keys, refused };
}

describe.each([["node-postgres"], ["postgres.js, prepare: false"]] as const)(
  "the outbox through PgBouncer on %s",
  (driver) => {
    it("publishes each of ten events once from two relays at once, and each is processed once by two consumers", async () => {
      const { instances, query } = await twoInstances(driver);
      const topic = `pooler.${globalThis.crypto.randomUUID()}`;
      const { keys, refused } = await enqueueTen(instances, topic);
      // Only the transactions in flight when idemkit learned of the pooler: never a storm.
      expect(refused).toBeLessThanOrEqual(4);
      expect(await query("select marker from notes")).toHaveLength(10);

      const published: string[] = [];
      const relays = instances.map((db) =>
        createRelay({
          db,
          publish: (event) => {
            if (event.topic === topic) published.push(event.key);
          },
        }),
      );
      await Promise.all(relays.map((relay) => relay.runOnce()));
      await Promise.all(relays.map((relay) => relay.runOnce()));
      expect([...published].sort()).toEqual([...keys].sort());

      const handled: string[] = [];
      const outcomes = await Promise.all(
        keys.flatMap((eventId) =>
          instances.map((db) =>
            processOnce({ db, consumer: "confirmations", eventId }, async () => {
              handled.push(eventId);
            }),
          ),
        ),
      );
      expect([...handled].sort()).toEqual([...keys].sort());
      expect(outcomes.filter((outcome) => outcome.processed)).toHaveLength(10);
    });
  },
);

describe("the outbox through PgBouncer on postgres.js with its defaults", () => {
  it("refuses processOnce and the relay from their first call, naming prepare: false: no handler runs, nothing is published", async () => {
    const { instances, query } = await twoInstances("postgres.js defaults");
    await query(
      "insert into outbox_events (topic, key, payload) select 'orders', 'order ' || n, '{}' from generate_series(1, 4) n",
    );
    let handled = 0;
    const refusals = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        processOnce(
          { db: instances[index % 2] as AnyDb, consumer: "confirmations", eventId: globalThis.crypto.randomUUID() },
          async () => {
            handled++;
          },
        ).then(
          () => "processed",
          (error: unknown) => (isIdempotencyError(error) ? `${error.code}: ${error.message}` : String(error)),
        ),
      ),
    );
    expect(handled).toBe(0);
    // Refused for good once the check answered; while it could not yet (the pooler busy), refused to be sent again.
    for (const refusal of refusals)
      expect(refusal).toMatch(/^STORE_(MISCONFIGURED|UNAVAILABLE): .*\{ prepare: false \}/);
    const published: string[] = [];
    const relay = createRelay({ db: instances[0] as AnyDb, publish: (event) => void published.push(event.key) });
    await expect(relay.runOnce()).rejects.toMatchObject({
      code: expect.stringMatching(/^STORE_(MISCONFIGURED|UNAVAILABLE)$/),
    });
    expect(published).toEqual([]);
    expect(await query("select key from outbox_events where published_at is not null")).toEqual([]);
  });

  it("on pools of one, which the first call cannot tell from a direct connection, calls an event processed only when its mark was kept", async () => {
    const { instances, query } = await twoInstances("postgres.js defaults", { max: 1 });
    const eventIds = Array.from({ length: 20 }, () => globalThis.crypto.randomUUID());
    const said: string[] = [];
    const refusals: string[] = [];
    await Promise.all(
      eventIds.map((eventId, index) =>
        processOnce({ db: instances[index % 2] as AnyDb, consumer: "confirmations", eventId }, async () => "sent").then(
          (outcome) => {
            if (outcome.processed) said.push(eventId);
          },
          (error: unknown) => refusals.push(String((error as Error).message)),
        ),
      ),
    );
    const kept = new Set(
      (await query<{ event_id: string }>("select event_id from processed_events")).map((row) => row.event_id),
    );
    expect(said.filter((eventId) => !kept.has(eventId))).toEqual([]);
    for (const message of refusals) expect(message).toContain("postgres(url, { prepare: false })");
  });
});
