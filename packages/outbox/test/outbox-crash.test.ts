/**
 * The outbox through crashes of real processes (SIGKILL): a relay killed after publishing and before marking
 * leaves the event to be published again, and the consumer still takes effect once; a consumer killed
 * mid-handler leaves nothing, and the redelivery takes effect once.
 */
import { openPostgres, spawnScript } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createOutbox, createRelay, processOnce } from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 4 });
  await database.query("create table deliveries (id serial primary key, event_key text not null)");
  await database.query("create table sent (id serial primary key, event_key text not null)");
});
afterAll(() => database.close());

const child = (env: Record<string, string>) =>
  spawnScript(new URL("./outbox-child.ts", import.meta.url), { DATABASE_URL: database.url, ...env });
const keysIn = async (table: "deliveries" | "sent", key: string) =>
  (await database.query(`select 1 from ${table} where event_key = $1`, [key])).length;

/** The consumer: sends the confirmation for one delivery, once per event. */
const consume = (key: string) =>
  processOnce({ db: database.db, consumer: "mailer", eventId: key }, async (tx) => {
    await tx.execute(sql`insert into sent (event_key) values (${key})`);
  });

describe("a crash", () => {
  it("of a relay after publishing, before marking: the event is published again, and takes effect once", async () => {
    const key = `crash-relay-${globalThis.crypto.randomUUID()}`;
    await database.db.transaction((tx) =>
      createOutbox().enqueue({ tx }, { topic: "order.placed", payload: { orderId: 1 }, key }),
    );
    const relay = child({ ROLE: "relay" });
    expect(await relay.next("HOLDING")).toBe(key);
    await relay.kill();
    expect(await keysIn("deliveries", key)).toBe(1);

    // Another relay takes the event once the dead one's lease (60 s) has ended: its clock is past it.
    const later = createRelay({
      db: database.db,
      now: () => Date.now() + 61_000,
      publish: async (event) => {
        await database.db.execute(sql`insert into deliveries (event_key) values (${event.key})`);
      },
    });
    await later.runOnce();
    expect(await keysIn("deliveries", key)).toBe(2);
    expect(await database.query("select state, attempts from outbox_events where key = $1", [key])).toEqual([
      { state: "published", attempts: 2 },
    ]);

    // Delivered twice, consumed once.
    expect([await consume(key), await consume(key)]).toEqual([
      { processed: true, value: undefined },
      { processed: false },
    ]);
    expect(await keysIn("sent", key)).toBe(1);
  });

  it("of a consumer mid-handler: nothing is kept, and the redelivery takes effect once", async () => {
    const key = `crash-consumer-${globalThis.crypto.randomUUID()}`;
    const consumer = child({ ROLE: "consumer", EVENT_ID: key });
    expect(await consumer.next("HOLDING")).toBe(key);
    await consumer.kill();
    expect(await keysIn("sent", key)).toBe(0);

    // PostgreSQL has rolled the dead consumer's transaction back once its connection closed; the redelivery waits
    // for that (on the row it had inserted), then runs.
    expect(await consume(key)).toEqual({ processed: true, value: undefined });
    expect(await consume(key)).toEqual({ processed: false });
    expect(await keysIn("sent", key)).toBe(1);
  });
});
