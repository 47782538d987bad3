/**
 * idemkit's own statements in atomic mode's transactions are rendered to SQL once per Drizzle instance, not once per
 * transaction (rendering was most of what sending them cost the app's CPU), on every driver, and each transaction's
 * are still sent on its own connection: the records they write commit or roll back with it.
 */
import { createIdempotencyEngine, isIdempotencyError } from "@idemkit/core";
import { createDatabase, MIGRATIONS_FOLDER, notesDatabases } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres4 from "postgres4";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { drizzleStore } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: each driver's database has its own type
type AnyDb = any;

const databases = notesDatabases(3);
let onFour: { db: AnyDb; close(): Promise<void> };
beforeAll(async () => {
  const database = await createDatabase(inject("postgresUrl"));
  const client = postgres4(database.url, { max: 3, onnotice: () => {} });
  const db = drizzle(client as never);
  await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
  await client.unsafe("create table notes (id serial primary key, key text not null)");
  onFour = {
    db,
    async close() {
      await client.end({ timeout: 5 });
      await database.drop();
    },
  };
});
afterAll(() => onFour?.close());

const drivers = [
  ["postgres.js 3", () => databases["postgres.js"].db],
  ["postgres.js 4", () => onFour.db],
  ["node-postgres", () => databases["node-postgres"].db],
  ["PGlite", () => databases.PGlite.db],
] as const;

describe.each(drivers)("atomic mode on %s", (_, dbOf) => {
  it("renders its statements once, and sends each transaction's on its own connection", async () => {
    const db = dbOf();
    const engine = createIdempotencyEngine({ store: drizzleStore({ db }), replayCacheSize: 0 });
    const rendered = vi.spyOn(db.dialect, "sqlToQuery");
    const call = (key: string, fail: boolean) =>
      engine
        .run({ scope: "s", path: "notes.rendered", key, fingerprint: "fp" }, async ({ tx }: { tx: AnyDb }) => {
          await tx.execute(sql`insert into notes (key) values (${key})`);
          // Fails the transaction after the claim: its record must go with it.
          if (fail) await tx.execute(sql`select 1 / 0`);
          return { value: key, response: { status: 200, body: JSON.stringify(key) } };
        })
        .then(
          () => "ran",
          (error: unknown) => (isIdempotencyError(error) ? error.code : "failed"),
        );
    const keys = Array.from({ length: 6 }, () => crypto.randomUUID());
    const outcomes = await Promise.all(keys.map((key, index) => call(key, index % 3 === 2)));
    expect(outcomes.filter((outcome) => outcome === "ran")).toHaveLength(4);
    const ownRenders = rendered.mock.results.filter((result) =>
      String((result.value as { sql: string }).sql).includes('"idempotency_keys"'),
    );
    rendered.mockRestore();
    // The claim and the completion, each once; concurrent first transactions may each render one before it is kept.
    expect(ownRenders.length).toBeLessThanOrEqual(2 * 3);
    // A record was kept exactly for each call that ran: the failed ones' claims rolled back with their transactions.
    for (const [index, key] of keys.entries()) {
      const again = await engine.run({ scope: "s", path: "notes.rendered", key, fingerprint: "fp" }, async () => ({
        value: "second",
        response: { status: 200, body: '"second"' },
      }));
      expect(again).toMatchObject(outcomes[index] === "ran" ? { replayed: true } : { value: "second" });
    }
  });
});
