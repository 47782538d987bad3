/**
 * The outbox's statements on each driver the store supports: the same enqueue, relay, dead-letter and
 * de-duplication steps through postgres.js, node-postgres and PGlite (the demo's embedded database).
 */

import { type Driver, notesDatabases } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createOutbox, createRelay, processOnce, retryDeadEvents } from "../src/index.js";

const databases = notesDatabases(2);

describe.each(["postgres.js", "node-postgres", "PGlite"] satisfies Driver[])("the outbox on %s", (driver) => {
  it("enqueues in a transaction, publishes, parks a failing event as dead and retries it, and de-duplicates", async () => {
    const { db, query } = databases[driver];
    const outbox = createOutbox();
    const topic = `drivers.${globalThis.crypto.randomUUID()}`;
    const { key } = await db.transaction((tx) =>
      outbox.enqueue({ tx, subKey: (name) => `${topic}:${name}` }, { topic, payload: { sku: "tea", qty: 2 } }),
    );
    let failing = true;
    const seen: unknown[] = [];
    const relay = createRelay({
      db,
      maxAttempts: 1,
      publish: (event) => {
        if (event.topic !== topic) return;
        seen.push(event.payload);
        if (failing) throw new Error("down");
      },
    });
    await relay.runOnce();
    const [dead] = await query<{ id: number; state: string }>("select id, state from outbox_events where key = $1", [
      key,
    ]);
    expect(dead?.state).toBe("dead");

    failing = false;
    expect(await retryDeadEvents({ db, ids: [Number(dead?.id)] })).toEqual([Number(dead?.id)]);
    await relay.runOnce();
    expect(seen).toEqual([
      { sku: "tea", qty: 2 },
      { sku: "tea", qty: 2 },
    ]);
    expect(await query("select state from outbox_events where key = $1", [key])).toEqual([{ state: "published" }]);

    const consume = () => processOnce({ db, consumer: driver, eventId: key }, async () => "sent");
    expect(await consume()).toEqual({ processed: true, value: "sent" });
    expect(await consume()).toEqual({ processed: false });
  });

  it("refuses to call an event processed when its handler caught a failed statement, and keeps nothing", async () => {
    const { db, query } = databases[driver];
    const eventId = globalThis.crypto.randomUUID();
    const options = { db, consumer: `${driver}-careless`, eventId };
    const careless = processOnce(options, async (tx) => {
      await tx.execute(sql`insert into notes (key) values (${eventId})`);
      await tx.execute(sql`select 1 / 0`).catch(() => {});
      return "swallowed";
    });
    await expect(careless).rejects.toThrow(/could not commit .*nothing was kept/);
    expect(await query("select 1 from notes where key = $1", [eventId])).toEqual([]);
    expect(await processOnce(options, async () => "redelivered")).toEqual({ processed: true, value: "redelivered" });
  });
});
