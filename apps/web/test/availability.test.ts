/**
 * The built demo as processes on a real PostgreSQL server that the tests take away and bring back (the harness in
 * `chaos/`, which `npm run chaos` runs at size):
 * - an instance started while the database is down answers 503 and says it is not ready, then serves once the
 *   database is up, with no restart;
 * - instances cold-starting together on an empty database all become ready;
 * - the database crashing under load, instances left running: every request is answered within the bound, every
 *   instance serves again once the database is back, and no order is placed twice or lost;
 * - an instance killed under load: its clients retry elsewhere with the same key, still exactly once.
 * Needs the build (`npm test` builds first).
 */
import { createDatabase, type RunningPostgres, startPostgres } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answered, type Instance, placeOrder, startInstance, type Verdict } from "../chaos/harness";
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
