/**
 * The store contract at one end of the peer ranges, run inside an app that installed the tarballs and that end's
 * versions of drizzle-orm and postgres.js with a plain `npm install`: the store and atomic-mode conformance suites,
 * and the outbox's round (an event enqueued in a transaction, published by the relay, processed once), on PGlite
 * and on a real PostgreSQL (IDEMKIT_PEER_DATABASE_URL, a database of its own), through postgres.js with its defaults
 * and with `prepare: false` (idemkit's statements as text, sent through Drizzle's `execute`).
 */
import { readFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { describeAtomicConformance, describeStoreConformance } from "@idemkit/core/testing";
import { drizzleStore } from "@idemkit/drizzle";
import { createOutbox, createRelay, type PublishedEvent, processOnce } from "@idemkit/outbox";
import { type SQL, sql } from "drizzle-orm";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const SCHEMA = `${readFileSync("schema.sql", "utf8")}; create table atomic_notes (marker text not null);`;
const url = String(process.env.IDEMKIT_PEER_DATABASE_URL);

const pglite = new PGlite();
const client = postgres(url, { max: 10, onnotice: () => {} });
/** As behind a transaction pooler: idemkit's statements go as text, with their values written in. */
const unprepared = postgres(url, { max: 10, prepare: false, onnotice: () => {} });
const databases = {
  PGlite: drizzlePglite({ client: pglite }),
  "PostgreSQL (postgres.js)": drizzlePostgres({ client }),
  "PostgreSQL (postgres.js, prepare: false)": drizzlePostgres({ client: unprepared }),
};

beforeAll(async () => {
  await pglite.exec(SCHEMA);
  await client.unsafe(SCHEMA);
});
afterAll(async () => {
  await Promise.all([client.end({ timeout: 1 }), unprepared.end({ timeout: 1 })]);
  await pglite.close();
});

/** A database or transaction, as far as the suites write to it. */
interface Executes {
  execute(query: SQL): PromiseLike<unknown>;
}

function suitesOn(name: string, db: Parameters<typeof drizzleStore>[0]["db"] & Executes, oneConnection: boolean): void {
  describeStoreConformance(`drizzleStore on ${name}`, async () => ({ store: drizzleStore({ db }) }));
  describeAtomicConformance(
    `drizzleStore on ${name}`,
    async () => ({
      store: drizzleStore({ db }),
      storeWithWait: (waitMs: number) => drizzleStore({ db, waitMs }),
      write: (tx: unknown, marker: string) =>
        Promise.resolve((tx as Executes).execute(sql`insert into atomic_notes (marker) values (${marker})`)),
      count: async (marker: string) => {
        const result = await db.execute(sql`select 1 from atomic_notes where marker = ${marker}`);
        return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows).length;
      },
      unstorableResponse: { status: 2 ** 40, body: "{}" },
    }),
    { oneConnection },
  );
}

function effectsOn(name: string, db: Parameters<typeof drizzleStore>[0]["db"]): void {
  describe(`the outbox on ${name}`, () => {
    it("publishes a committed transaction's event, not a rolled back one's, and a consumer processes it once", async () => {
      const outbox = createOutbox();
      const key = globalThis.crypto.randomUUID();
      await db.transaction((tx) => outbox.enqueue({ tx }, { topic: "order.placed", payload: { key }, key }));
      const rolledBack = db.transaction(async (tx) => {
        await outbox.enqueue({ tx }, { topic: "order.placed", payload: {}, key: `${key}-rolled-back` });
        throw new Error("rolled back");
      });
      await expect(rolledBack).rejects.toThrow("rolled back");
      const published: PublishedEvent[] = [];
      await createRelay({ db, publish: (event) => void published.push(event) }).runOnce();
      expect(published.map((event) => event.key)).toEqual([key]);
      const handle = () => processOnce({ db, consumer: "mailer", eventId: key }, async () => "sent");
      expect(await handle()).toEqual({ processed: true, value: "sent" });
      expect(await handle()).toEqual({ processed: false });
    });
  });
}

suitesOn("PGlite", databases.PGlite, true);
suitesOn("PostgreSQL (postgres.js)", databases["PostgreSQL (postgres.js)"], false);
suitesOn("PostgreSQL (postgres.js, prepare: false)", databases["PostgreSQL (postgres.js, prepare: false)"], false);
effectsOn("PGlite", databases.PGlite);
effectsOn("PostgreSQL (postgres.js)", databases["PostgreSQL (postgres.js)"]);
