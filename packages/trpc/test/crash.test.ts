/**
 * A request whose process dies mid-flight (SIGKILL, no cleanup of any kind). Atomic mode: the database rolls the
 * transaction back, so no business row and no claim survive, and the retry runs once. Lease mode: the claim
 * survives, retries get 409 until the lease ends, then one takes over; the dead owner can never complete.
 */
import { drizzleStore } from "@idemkit/drizzle";
import { openPostgres, type ServedHandler, serveFetch } from "@idemkit/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import { BUSINESS_TABLES, createApp } from "./app.js";
import { mutate } from "./client.js";
import { type Child, spawnChild } from "./spawn.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 10 });
  await database.query(BUSINESS_TABLES);
});
afterAll(() => database.close());
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

function spawnApp(env: Record<string, string>): Promise<Child> {
  return spawnChild("./crash-child.ts", { DATABASE_URL: database.url, ...env }).then((child) => {
    cleanups.push(() => child.kill());
    return child;
  });
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const [row] = await database.query<{ n: number }>(sql, params);
  return row?.n ?? 0;
}

async function serve(app: ReturnType<typeof createApp>): Promise<string> {
  const server: ServedHandler = await serveFetch(app.handler);
  cleanups.push(() => server.close());
  return server.url;
}

describe("a process killed mid-request", () => {
  it("atomic mode: leaves no business row and no claim; the retry runs once", async () => {
    const child = await spawnApp({ IDEMKIT_MODE: "atomic" });
    const userId = "crash-atomic";
    const key = globalThis.crypto.randomUUID();
    const lost = mutate(child.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: userId }).catch((error) => error);
    expect(await child.nextHold()).toBe(key);
    await child.kill();
    expect(await lost).toBeInstanceOf(Error);

    // PostgreSQL rolls back the dead connection's transaction as soon as it sees the socket close.
    await expect
      .poll(() =>
        count(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'",
          [],
        ),
      )
      .toBe(0);
    expect(await count("select count(*)::int as n from orders where user_id = $1", [userId])).toBe(0);
    expect(await count("select count(*)::int as n from idempotency_keys where key = $1", [key])).toBe(0);

    const app = createApp({ db: database.db });
    const url = await serve(app);
    const retry = await mutate(url, "placeOrder", { sku: "A", qty: 1 }, { key, user: userId });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    const again = await mutate(url, "placeOrder", { sku: "A", qty: 1 }, { key, user: userId });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(app.executions.get("placeOrder")).toBe(1);
    expect(await count("select count(*)::int as n from orders where user_id = $1", [userId])).toBe(1);
  });

  it("lease mode: 409 (come back in 1 s) until the lease ends, then one retry takes over; the dead owner is fenced out", async () => {
    const leaseMs = 60_000;
    const child = await spawnApp({ IDEMKIT_MODE: "lease", IDEMKIT_LEASE_MS: String(leaseMs) });
    const userId = "crash-lease";
    const key = globalThis.crypto.randomUUID();
    const lost = mutate(child.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: userId }).catch((error) => error);
    expect(await child.nextHold()).toBe(key);
    await child.kill();
    await lost;

    let skewMs = 0;
    const app = createApp({ db: database.db, mode: "lease", leaseMs, now: () => Date.now() + skewMs });
    const url = await serve(app);
    const early = await mutate(url, "placeOrder", { sku: "A", qty: 1 }, { key, user: userId });
    expect(early.status).toBe(409);
    // The lease only bounds a crashed call: the client is asked back soon, and takes over once the lease ended.
    expect(early.headers.get("retry-after")).toBe("1");

    skewMs = leaseMs;
    const takeover = await mutate(url, "placeOrder", { sku: "A", qty: 1 }, { key, user: userId });
    expect(takeover.status).toBe(200);
    expect(takeover.headers.get("idempotent-replayed")).toBeNull();
    expect(app.events.map((event) => event.type)).toEqual(["conflict", "takeover", "executed"]);

    // The killed owner held fence 1; if it came back now, its result must not land.
    const store = drizzleStore({ db: database.db });
    const id = { scope: userId, path: "placeOrder", key };
    expect(await store.complete(id, 1, { status: 200, body: '{"result":"stale"}' }, Date.now() + 60_000)).toBe(false);
    expect(await store.release(id, 1)).toBe(false);
    const replay = await mutate(url, "placeOrder", { sku: "A", qty: 1 }, { key, user: userId });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.text).toBe(takeover.text);
    expect(app.executions.get("placeOrder")).toBe(1);
  });
});
