/**
 * Behind a transaction pooler: PgBouncer in transaction mode with no prepared statements (Debian's 1.18, the
 * strictest case, as Supabase's pooler on port 6543), two app instances with pools of their own in front of it, as
 * a Next.js app on a pooled URL has. Each driver works there, or is refused with STORE_MISCONFIGURED naming the fix:
 * never a crash, a hang, a storm of 503s, or an answer for a commit that did not happen.
 *
 * The first describe runs first: it sees node-postgres before idemkit learned that names do not survive here.
 */
import { createIdempotencyEngine, IdempotencyErrorCode, isIdempotencyError } from "@idemkit/core";
import type { Execution, IdempotentRequest } from "@idemkit/core/adapter";
import { describeAtomicConformance, describeStoreConformance } from "@idemkit/core/testing";
import { guardedConnections } from "@idemkit/postgres-js-guard";
import {
  openPooled,
  type PooledDatabase,
  type PooledDriver,
  type RunningPgbouncer,
  startPgbouncer,
} from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { drizzleStore, type TransactionOf } from "../src/index.js";

// biome-ignore lint/suspicious/noExplicitAny: the suites run over each driver's own database type
type AnyDb = any;

let bouncer: RunningPgbouncer;
const opened: PooledDatabase[] = [];

/** A database of its own with a notes table, and two instances on it through the pooler. */
async function twoInstances(driver: PooledDriver): Promise<PooledDatabase> {
  const database = await openPooled(inject("postgresUrl"), bouncer, driver);
  opened.push(database);
  await database.query("create table notes (marker text not null)");
  return database;
}

beforeAll(async () => {
  bouncer = await startPgbouncer(inject("postgresUrl"), { poolSize: 4 });
});
afterAll(async () => {
  await Promise.all(opened.map((database) => database.close()));
  await bouncer?.stop();
});

const answer = { status: 200, body: '"placed"' };

/** One order per call: a note under the call's key, in the call's transaction. */
async function placeOrder({ tx }: Execution<TransactionOf<AnyDb>>, key: string) {
  await (tx as AnyDb).execute(sql`insert into notes (marker) values (${key})`);
  return { value: key, response: answer };
}

describe("node-postgres behind the pooler, before idemkit learned that names are lost there", () => {
  it("places one order per key for 40 actions on two instances, retried with their keys after a 503", async () => {
    const { query, instances } = await twoInstances("node-postgres");
    const engines = instances.map((db) => createIdempotencyEngine({ store: drizzleStore({ db: db as AnyDb }) }));
    const keys = Array.from({ length: 40 }, () => crypto.randomUUID());
    const statuses: string[] = [];
    await Promise.all(
      keys.map(async (key, index) => {
        const request: IdempotentRequest = { scope: "s", path: "orders.place", key, fingerprint: "fp" };
        // A client retries a retryable answer with the same key, as idemkit's link does, on either instance.
        for (let attempt = 0; attempt < 3; attempt++) {
          const engine = engines[(index + attempt) % 2] as (typeof engines)[number];
          try {
            await engine.run(request, (execution) => placeOrder(execution, key));
            statuses.push("ok");
            return;
          } catch (error) {
            if (!isIdempotencyError(error) || !error.retryable) throw error;
            statuses.push(error.code);
          }
        }
        throw new Error(`${key} still failing after 3 attempts`);
      }),
    );
    const placed = await query<{ marker: string }>("select marker from notes");
    expect(placed.map((row) => row.marker).sort()).toEqual([...keys].sort());
    // Only the calls in flight when the names were found lost: never a storm.
    expect(statuses.filter((status) => status !== "ok").length).toBeLessThanOrEqual(10);
  });
});

/**
 * Sixty orders on `instances` at once: every one answered as placed is in the table; every other is refused with
 * STORE_MISCONFIGURED, whose detail (the cause, for the operator's log) says to connect with `prepare: false`.
 */
async function expectOnlyKeptOrdersAnswered(instances: AnyDb[], query: PooledDatabase["query"]): Promise<void> {
  const engines = instances.map((db) => createIdempotencyEngine({ store: drizzleStore({ db }) }));
  const placedKeys: string[] = [];
  const refusals: string[] = [];
  await Promise.all(
    Array.from({ length: 60 }, async (_, index) => {
      const key = crypto.randomUUID();
      const engine = engines[index % 2] as (typeof engines)[number];
      try {
        await engine.run({ scope: "s", path: "orders.place", key, fingerprint: "fp" }, (execution) =>
          placeOrder(execution, key),
        );
        placedKeys.push(key);
      } catch (error) {
        if (!isIdempotencyError(error) || error.code !== IdempotencyErrorCode.STORE_MISCONFIGURED) throw error;
        refusals.push(String((error.cause as Error | undefined)?.message));
      }
    }),
  );
  const kept = new Set((await query<{ marker: string }>("select marker from notes")).map((row) => row.marker));
  expect(placedKeys.filter((key) => !kept.has(key))).toEqual([]);
  for (const message of refusals) expect(message).toContain("postgres(url, { prepare: false })");
}

/** One call alone on `engine` (nothing else holds the pool): refused as misconfigured, and nothing ran. */
async function expectRefusedForGood(engine: { run: ReturnType<typeof createIdempotencyEngine>["run"] }) {
  let ran = false;
  const outcome = await engine
    .run({ scope: "s", path: "orders.place", key: crypto.randomUUID(), fingerprint: "fp" }, async () => {
      ran = true;
      return { value: "placed", response: answer };
    })
    .then(
      () => "answered",
      (error: unknown) => (isIdempotencyError(error) ? error.code : String(error)),
    );
  expect({ outcome, ran }).toEqual({ outcome: IdempotencyErrorCode.STORE_MISCONFIGURED, ran: false });
}

describe("postgres.js with its defaults behind the pooler", () => {
  it("is refused from the first call, naming prepare: false, before anything runs: 60 orders, none placed", async () => {
    const { query, instances } = await twoInstances("postgres.js defaults");
    const engines = instances.map((db) => createIdempotencyEngine({ store: drizzleStore({ db: db as AnyDb }) }));
    let runs = 0;
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, (_, index) =>
        (engines[index % 2] as (typeof engines)[number])
          .run({ scope: "s", path: "orders.place", key: crypto.randomUUID(), fingerprint: "fp" }, (execution) => {
            runs++;
            return placeOrder(execution, "placed");
          })
          .then(
            () => "answered",
            // What the operator's log gets: the refusal the engine answered with, or carries as its cause.
            (error: unknown) =>
              isIdempotencyError(error)
                ? `${error.code}: ${error.message} ${(error.cause as Error | undefined)?.message}`
                : String(error),
          ),
      ),
    );
    expect(runs).toBe(0);
    expect(await query("select marker from notes")).toEqual([]);
    // Refused for good once the check answered; a call that came while it could not yet (the pooler busy) is refused
    // to be sent again. Both name the fix.
    for (const outcome of outcomes) {
      expect(outcome).toMatch(/^STORE_(MISCONFIGURED|UNAVAILABLE): .*postgres\(url, \{ prepare: false \}\)/);
    }
    // Once the storm is over the check can ask: each instance is refused for good.
    for (const engine of engines) await expectRefusedForGood(engine);
  });

  it("is refused in lease mode too, whose statements postgres.js sends again by itself: the work never runs", async () => {
    const { instances } = await twoInstances("postgres.js defaults");
    const engines = instances.map((db) =>
      createIdempotencyEngine({ store: drizzleStore({ db: db as AnyDb }), mode: "lease" }),
    );
    const key = crypto.randomUUID();
    let runs = 0;
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        (engines[index % 2] as (typeof engines)[number])
          .run({ scope: "s", path: "orders.place", key, fingerprint: "fp" }, async () => {
            runs++;
            return { value: key, response: answer };
          })
          .then(
            () => "answered",
            (error: unknown) => (isIdempotencyError(error) ? error.code : String(error)),
          ),
      ),
    );
    expect(runs).toBe(0);
    for (const outcome of outcomes) {
      expect([IdempotencyErrorCode.STORE_MISCONFIGURED, IdempotencyErrorCode.STORE_UNAVAILABLE]).toContain(outcome);
    }
    for (const engine of engines) await expectRefusedForGood(engine);
  });

  it("is asked again, in the background, by the calls after a first one whose pool had no second connection free", async () => {
    const database = await openPooled(inject("postgresUrl"), bouncer, "postgres.js defaults", { max: 2 });
    opened.push(database);
    const [db] = database.instances as AnyDb[];
    const store = drizzleStore({ db });
    const id = { scope: "s", path: "orders.place", key: crypto.randomUUID() };
    /** A call's outcome once it settles, without a clock moving it on. */
    const settled = (call: Promise<unknown>) => {
      const outcome: { value?: unknown; error?: unknown; done: boolean } = { done: false };
      call.then(
        (value) => Object.assign(outcome, { value, done: true }),
        (error: unknown) => Object.assign(outcome, { error, done: true }),
      );
      return outcome;
    };
    /** Waits, on the real clock, for `outcome` to settle while the fake one stands still. */
    const realTimeout = globalThis.setTimeout;
    const untilSettled = async (outcome: { done: boolean }) => {
      for (let waited = 0; !outcome.done && waited < 10_000; waited += 10) {
        await new Promise((resolve) => realTimeout(resolve, 10));
      }
    };
    // The app holds one of the two connections while idemkit's first call asks: the question cannot be put.
    const held = await db.$client.reserve();
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const first = settled(store.get(id));
      // waitFor moves the fake clock on at each try: the call, and the question, each wait 2 s for it.
      await vi.waitFor(() => expect(first).toEqual({ value: undefined, done: true }), { timeout: 10_000 });
      // The pool is still busy: the next call answers with the clock standing still, its question left behind it.
      const second = settled(store.get(id));
      await untilSettled(second);
      expect(second).toEqual({ value: undefined, done: true });
      held.release();
      // The next calls ask again without waiting for it; one of them, or a call after them, is refused.
      await vi.waitFor(() => expect(store.get(id)).rejects.toMatchObject({ code: "STORE_MISCONFIGURED" }), {
        timeout: 10_000,
      });
    } finally {
      vi.useRealTimers();
    }
  });

  it("on a pool of one, which the first call cannot tell from a direct connection, answers no order that was not kept", async () => {
    const database = await openPooled(inject("postgresUrl"), bouncer, "postgres.js defaults", { max: 1 });
    opened.push(database);
    await database.query("create table notes (marker text not null)");
    await expectOnlyKeptOrdersAnswered(database.instances, database.query);
  });
});

describe.each([["postgres.js, prepare: false"], ["node-postgres"]] as const)("behind the pooler on %s", (driver) => {
  let database: PooledDatabase;
  let db: AnyDb;
  beforeAll(async () => {
    database = await twoInstances(driver);
    [db] = database.instances;
    await database.query("create table atomic_notes (marker text not null)");
  });

  describeStoreConformance(`drizzleStore through PgBouncer (${driver})`, async () => ({
    store: drizzleStore({ db }),
  }));
  describeAtomicConformance(`drizzleStore through PgBouncer (${driver})`, async () => ({
    store: drizzleStore({ db }),
    storeWithWait: (waitMs: number) => drizzleStore({ db, waitMs }),
    write: (tx: AnyDb, marker: string) => tx.execute(sql`insert into atomic_notes (marker) values (${marker})`),
    count: async (marker: string) =>
      (await database.query("select 1 from atomic_notes where marker = $1", [marker])).length,
    unstorableResponse: { status: 2 ** 40, body: "{}" },
  }));
});

describe("idemkit's statements sent unprepared, their values written as literals", () => {
  it("keep keys, scopes and answers with quotes, backslashes and any character as they are", async () => {
    const { instances } = await twoInstances("postgres.js, prepare: false");
    const store = drizzleStore({ db: instances[0] as AnyDb });
    const awkward = `${String.raw`it's \' a \\ "key" \x00? $1 E'' 😀`}\n\t`;
    const id = { scope: `${awkward}scope`, path: `${awkward}path`, key: `${awkward}key` };
    const now = Date.now();
    const claimed = await store.claim({
      id,
      fingerprint: awkward,
      now,
      leaseExpiresAt: now + 30_000,
      expiresAt: now + 60_000,
    });
    expect(claimed).toMatchObject({ status: "claimed" });
    const fence = claimed.status === "claimed" ? claimed.fence : Number.NaN;
    expect(await store.complete(id, fence, { status: 200, body: JSON.stringify(awkward) }, now + 60_000)).toBe(true);
    expect(await store.get(id)).toMatchObject({ fingerprint: awkward, response: { body: JSON.stringify(awkward) } });
    // Another id differing only where escaping could fold two apart is another record.
    expect(await store.get({ ...id, key: id.key.replace("\\\\", "\\") })).toBeUndefined();
  });
});

describe("postgres.js with its defaults through guardedConnections behind the pooler", () => {
  it("fails a COMMIT that PostgreSQL answered ROLLBACK: every transaction reported committed is kept", async () => {
    const database = await twoInstances("postgres.js defaults");
    const client = postgres(bouncer.pooled(database.url), guardedConnections({ max: 5, onnotice: () => {} }));
    try {
      const reported: number[] = [];
      const failures: string[] = [];
      await Promise.all(
        Array.from({ length: 60 }, (_, n) =>
          client
            .begin(async (tx) => {
              await tx`insert into notes (marker) values (${`plain ${n}`})`;
              await tx`select marker from notes where marker = ${`plain ${n}`}`;
            })
            .then(
              () => reported.push(n),
              (error: { code?: string }) => failures.push(String(error.code)),
            ),
        ),
      );
      const kept = new Set(
        (await database.query<{ marker: string }>("select marker from notes")).map((row) => row.marker),
      );
      expect(reported.filter((n) => !kept.has(`plain ${n}`))).toEqual([]);
      // What failed is the lost statement's own error, or the guard's for the COMMIT answered ROLLBACK.
      expect(failures.filter((code) => code !== "26000" && code !== "25P02")).toEqual([]);
    } finally {
      await client.end({ timeout: 5 });
    }
  });

  it("answers no order that was not kept on pools of one, with no read of its own after the COMMIT", async () => {
    const database = await twoInstances("postgres.js defaults");
    const clients = [0, 1].map(() =>
      postgres(bouncer.pooled(database.url), guardedConnections({ max: 1, onnotice: () => {} })),
    );
    try {
      await expectOnlyKeptOrdersAnswered(
        clients.map((client) => drizzle(client)),
        database.query,
      );
    } finally {
      await Promise.all(clients.map((client) => client.end({ timeout: 5 })));
    }
  });
});
