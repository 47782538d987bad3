/**
 * The built demo as processes on a real PostgreSQL server that the tests take away and bring back (the harness in
 * `chaos/`, which `npm run chaos` runs at size):
 * - an instance started while the database is down answers 503 and says it is not ready, then serves once the
 *   database is up, with no restart;
 * - instances cold-starting together on an empty database all become ready;
 * - the database crashing under load, instances left running: every request is answered within the bound, every
 *   instance serves again once the database is back, and no order is placed twice or lost;
 * - an instance killed under load: its clients retry elsewhere with the same key, still exactly once;
 * - two instances started together on an empty database behind PgBouncer in transaction mode both get ready, and
 *   serve.
 * Needs the build (`npm test` builds first).
 */
import { createDatabase, type RunningPostgres, startPgbouncer, startPostgres } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answered, type Instance, placeOrder, ready, startInstance, type Verdict } from "../chaos/harness";
import { instanceKilled, outageUnderLoad } from "../chaos/scenarios";

let postgres: RunningPostgres;
let app: Instance | undefined;
/** Whether a test left the server down (it failed halfway): stop() needs it running. */
let down = false;

beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  app?.kill();
  if (down) await postgres.resume?.();
  await postgres?.stop();
});

/**
 * The longest any answer may take while the database fails: a duplicate's wait (waitMs, 5 s, which also bounds
 * queueing for a connection) plus one store call (storeTimeoutMs, 5 s), and a second for the machine.
 */
const ANSWER_BOUND_MS = 11_000;

/** Every action answered 200 has exactly one order, every action was answered 200, and no key is left held. */
function expectExactlyOnce(row: Verdict): void {
  const { duplicates, lost, failed, inProgress } = row;
  expect({ duplicates, lost, failed, inProgress }).toEqual({ duplicates: 0, lost: 0, failed: 0, inProgress: 0 });
}

describe.skipIf(process.env.DATABASE_URL)("the demo through database faults", () => {
  it("starts while PostgreSQL is down, answers 503 meanwhile, and serves once it is back, with no restart", async () => {
    const { url } = await createDatabase(postgres.url);
    await postgres.halt?.();
    down = true;
    app = await startInstance("app", url);
    const order = () => placeOrder(app?.base ?? "", "outage", "outage-order-1");

    expect(await (await answered(`${app.base}/api/health`, 503)).json()).toEqual({ status: "unavailable" });
    expect((await order()).status).toBe(503);

    await postgres.resume?.();
    down = false;
    expect(await (await answered(`${app.base}/api/health`, 200)).json()).toEqual({ status: "ready" });
    const placed = await order();
    expect(placed.status).toBe(200);
    const again = await order();
    expect(again).toEqual(placed);
    app.kill();
  }, 120_000);

  it("answers every request within the bound while PostgreSQL crashes under load, then serves, exactly once", async () => {
    down = true;
    const row = await outageUnderLoad(postgres, {
      instances: 2,
      clients: 6,
      beforeMs: 2_000,
      outageMs: 2_000,
      afterMs: 4_000,
      fault: "crash",
    });
    down = false;
    expect(row.byStatus["503"]).toBeGreaterThan(0);
    expect(row.slowestMs).toBeLessThan(ANSWER_BOUND_MS);
    expect(Object.values(row.recoveryMs).every((ms) => ms !== undefined)).toBe(true);
    // postgres.js is never left to write on a connection that died under a transaction (it would throw uncaught).
    expect(row.uncaught).toBe(0);
    expectExactlyOnce(row);
  }, 120_000);

  it("places every order exactly once when an instance is killed under load and replaced", async () => {
    const row = await instanceKilled(postgres, { instances: 2, clients: 6, beforeMs: 2_000, afterMs: 2_000 });
    expect(row.byStatus.none).toBeGreaterThan(0);
    expect(Object.values(row.recoveryMs).every((ms) => ms !== undefined)).toBe(true);
    expectExactlyOnce(row);
  }, 120_000);
});

describe.skipIf(process.env.DATABASE_URL)("the demo behind a transaction pooler", () => {
  it("two instances started at once on an empty database through PgBouncer both get ready, and the API places one order", async () => {
    const bouncer = await startPgbouncer(postgres.url, { poolSize: 4 });
    const database = await createDatabase(postgres.url);
    // As on Supabase or Neon: the app's URL is the pooler's, and no direct URL is given for migrations.
    const instances = await Promise.all(["a", "b"].map((name) => startInstance(name, bouncer.pooled(database.url))));
    try {
      // Health answers while the instances migrate, each within its own 2 s bound (answered() gives up at 10 s).
      await Promise.all(instances.map((instance) => ready(instance)));
      const [a, b] = instances as [Instance, Instance];
      const key = globalThis.crypto.randomUUID();
      const placed = await placeOrder(a.base, "ada", key);
      expect(placed.status).toBe(200);
      expect(await placeOrder(b.base, "ada", key)).toEqual(placed);
      expect(instances.map((instance) => instance.uncaught())).toEqual([0, 0]);
    } finally {
      for (const instance of instances) instance.kill();
      await bouncer.stop();
      await database.drop();
    }
  }, 120_000);
});
