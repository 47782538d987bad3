/**
 * postgres.js 4, the major a new app installs today, beside 3.4 (the rest of the suite's): the store and atomic
 * conformance suites on it, and what differs. On 4 idemkit begins its transactions itself and reads COMMIT's answer
 * (see src/postgres-js.ts), so atomic mode reads nothing back after the COMMIT; on 3 with `prepare` on, which can
 * report a rolled-back COMMIT done, the completion says whether the connection holds its prepared COMMIT, and the
 * record is read back where not. The transaction the procedure gets is Drizzle's own all
 * the same, and nests. Its round trips: `round-trips.test.ts`.
 */
import { createIdempotencyEngine } from "@idemkit/core";
import { describeAtomicConformance, describeStoreConformance } from "@idemkit/core/testing";
import { createDatabase, MIGRATIONS_FOLDER } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { PgTransaction } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres3 from "postgres";
import postgres4 from "postgres4";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { drizzleStore } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: each major's client and database have their own types
type AnyDb = any;

/** A migrated database of its own on one major, with the texts of the statements its client sent. */
async function openOn(major: typeof postgres3 | typeof postgres4) {
  const database = await createDatabase(inject("postgresUrl"));
  const sent: string[] = [];
  const client = (major as typeof postgres3)(database.url, {
    max: 10,
    onnotice: () => {},
    debug: (_connection, text) => sent.push(text),
  });
  const db: AnyDb = drizzle(client);
  await migrate(db, { migrationsFolder: MIGRATIONS_FOLDER });
  await client.unsafe("create table atomic_notes (marker text not null)");
  return {
    db,
    url: database.url,
    sent,
    query: (text: string, params: unknown[] = []) => client.unsafe(text, params as never[]) as Promise<unknown[]>,
    async close() {
      await client.end({ timeout: 5 });
      await database.drop();
    },
  };
}

let onFour: Awaited<ReturnType<typeof openOn>>;
let onThree: Awaited<ReturnType<typeof openOn>>;
beforeAll(async () => {
  [onFour, onThree] = await Promise.all([openOn(postgres4), openOn(postgres3)]);
});
afterAll(async () => {
  await Promise.all([onFour?.close(), onThree?.close()]);
});

describeStoreConformance("drizzleStore on PostgreSQL (postgres.js 4)", async () => ({
  store: drizzleStore({ db: onFour.db }),
}));

describeAtomicConformance("drizzleStore on PostgreSQL (postgres.js 4)", async () => ({
  store: drizzleStore({ db: onFour.db }),
  storeWithWait: (waitMs: number) => drizzleStore({ db: onFour.db, waitMs }),
  write: (tx: AnyDb, marker: string) => tx.execute(sql`insert into atomic_notes (marker) values (${marker})`),
  count: async (marker: string) =>
    (await onFour.query("select 1 from atomic_notes where marker = $1", [marker])).length,
  unstorableResponse: { status: 2 ** 40, body: "{}" },
}));

describe("atomic mode's proof of its COMMIT", () => {
  /** How many statements one first execution sends that read the record back after its COMMIT. */
  async function readsBackOn(database: { db: AnyDb; sent: string[] }): Promise<number> {
    const engine = createIdempotencyEngine({ store: drizzleStore({ db: database.db }) });
    const before = database.sent.length;
    const call = engine.run(
      { scope: "s", path: "orders.place", key: crypto.randomUUID(), fingerprint: "fp" },
      async () => ({
        value: "placed",
        response: { status: 200, body: '"placed"' },
      }),
    );
    // A call that fails is counted too: the read is what found its COMMIT not kept.
    await call.catch(() => {});
    return database.sent.slice(before).filter((text) => text.includes("as kept from")).length;
  }

  it("is postgres.js 4's own, which fails a COMMIT answered ROLLBACK: no read after it", async () => {
    expect(await readsBackOn(onFour)).toBe(0);
  });

  it("on 3, is the completion's: a read only while the connection holds no prepared COMMIT", async () => {
    const sent: string[] = [];
    const client = postgres3(onThree.url, { max: 1, onnotice: () => {}, debug: (_, text) => sent.push(text) });
    try {
      const database = { db: drizzle(client), sent };
      // Its first transaction prepares the COMMIT; the ones after it find it held, and postgres.js sends that one.
      expect([await readsBackOn(database), await readsBackOn(database), await readsBackOn(database)]).toEqual([
        1, 0, 0,
      ]);
      // An app's own DISCARD ALL drops it (and the calls that meet their own statements missing fail): read back
      // once more, by the call whose COMMIT postgres.js prepares again, and not after.
      await client.unsafe("discard all");
      const after: number[] = [];
      for (let call = 0; call < 4; call++) after.push(await readsBackOn(database));
      expect(after).toEqual([0, 1, 0, 0]);
    } finally {
      await client.end({ timeout: 5 });
    }
  });
});

describe("the transaction idemkit begins on postgres.js 4", () => {
  it("is Drizzle's own, and nests: a savepoint that fails is undone alone, the rest commits with the answer", async () => {
    const engine = createIdempotencyEngine({ store: drizzleStore({ db: onFour.db }) });
    const request = { scope: "s", path: "notes.nest", key: crypto.randomUUID(), fingerprint: "fp" };
    const marker = (name: string) => `${request.key}:${name}`;
    const work = async ({ tx }: { tx: AnyDb }) => {
      expect(tx).toBeInstanceOf(PgTransaction);
      await tx.execute(sql`insert into atomic_notes (marker) values (${marker("outer")})`);
      await tx.transaction((inner: AnyDb) =>
        inner.execute(sql`insert into atomic_notes (marker) values (${marker("kept")})`),
      );
      let rolledBack: AnyDb;
      await tx
        .transaction(async (inner: AnyDb) => {
          rolledBack = inner;
          await inner.execute(sql`insert into atomic_notes (marker) values (${marker("undone")})`);
          throw new Error("undone");
        })
        .catch(() => {});
      // A statement through a savepoint that was rolled back would run in the transaction around it: refused.
      await expect(
        rolledBack.execute(sql`insert into atomic_notes (marker) values (${marker("late")})`),
      ).rejects.toThrow();
      return { value: "placed", response: { status: 200, body: '"placed"' } };
    };
    expect(await engine.run(request, work)).toEqual({ replayed: false, value: "placed" });
    expect(await engine.run(request, work)).toEqual({ replayed: true, response: { status: 200, body: '"placed"' } });
    const kept = await onFour.query("select marker from atomic_notes where marker like $1 order by marker", [
      `${request.key}:%`,
    ]);
    expect(kept).toEqual([{ marker: marker("kept") }, { marker: marker("outer") }]);
  });
});

describe("on postgres.js 4's pool of one connection, which idemkit's transaction holds", () => {
  it("refuses at once a statement, or another idempotent transaction, sent through the database itself", async () => {
    const client = postgres4(onFour.url, { max: 1, onnotice: () => {} });
    try {
      const db: AnyDb = drizzle(client as never);
      const store = drizzleStore({ db });
      const inside = (bypass: () => PromiseLike<unknown>) =>
        store.atomic
          .transaction(async (session) => {
            const now = Date.now();
            const id = { scope: "s", path: "notes.bypass", key: crypto.randomUUID() };
            await session.claim({ id, fingerprint: "fp", now, leaseExpiresAt: now + 30_000, expiresAt: now + 60_000 });
            await bypass();
          })
          .then(
            () => "ran",
            (error: unknown) => String((error as Error).cause ?? error),
          );
      // idemkit's own transactions on postgres.js 4 begin on a reserved connection: the nested one is refused too.
      for (const bypass of [() => db.execute(sql`select 1`), () => store.atomic.transaction(async () => "nested")]) {
        expect(await inside(bypass)).toMatch(/sent a statement through the database itself/);
      }
      expect(await db.execute(sql`select 1 as one`)).toEqual([{ one: 1 }]);
    } finally {
      await client.end({ timeout: 5 });
    }
  });
});
