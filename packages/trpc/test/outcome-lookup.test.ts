/**
 * The outcome lookup over real HTTP on a real PostgreSQL: what became of an action, asked without sending its input
 * again. It answers running while the call runs (in atomic mode and in lease mode), completed with the result as a
 * replay would give it (types included), failed with a stored refusal, and unknown for what never committed or has
 * expired; and only ever to the action's own scope.
 */
import { memoryStore } from "@idemkit/core";
import { gate, openPostgres, type ServedHandler, serveFetch } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { outcomeLookup } from "../src/index.js";
import { BUSINESS_TABLES, createApp } from "./app.js";
import { mutate, query } from "./client.js";

let database: Awaited<ReturnType<typeof openPostgres>>;

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"));
  await database.query(BUSINESS_TABLES);
});
afterAll(() => database.close());

/** A fixture app whose placeOrder can be held mid-flight, on a clock the test moves. */
async function serve(mode: "atomic" | "lease") {
  const held = new Map<string, Promise<void>>();
  let clock = Date.now();
  const app = createApp({ db: database.db, mode, ttlMs: 60_000, now: () => clock, hold: (key) => held.get(key) });
  const server = await serveFetch(app.handler);
  return {
    server,
    held,
    later: (ms: number) => {
      clock += ms;
    },
  };
}

const lookup = (server: ServedHandler, path: string, key: string, user = "alice") =>
  query(server.url, "idempotencyOutcome", { input: { path, key }, user });

describe.each(["atomic", "lease"] as const)("in %s mode", (mode) => {
  let app: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    app = await serve(mode);
  });
  afterAll(() => app.server.close());

  it("answers running while the call runs, then completed with its result as a replay gives it", async () => {
    const key = globalThis.crypto.randomUUID();
    const { opened: release, open: letItFinish } = gate();
    app.held.set(key, release);
    const placing = mutate(app.server.url, "placeOrder", { sku: "tea", qty: 2 }, { key });
    await expect
      .poll(async () => (await lookup(app.server, "placeOrder", key)).data, { timeout: 10_000 })
      .toEqual({ state: "running" });
    letItFinish();
    const placed = await placing;
    expect(placed.status).toBe(200);
    const answer = await lookup(app.server, "placeOrder", key);
    expect(answer.data).toEqual({ state: "completed", data: placed.data });
    expect((answer.data as { data: { createdAt: unknown } }).data.createdAt).toBeInstanceOf(Date);
  });

  it("answers failed with a stored refusal, and unknown for a call whose failure was not kept", async () => {
    const refusedKey = globalThis.crypto.randomUUID();
    const crashedKey = globalThis.crypto.randomUUID();
    expect((await mutate(app.server.url, "placeOrder", { sku: "unknown", qty: 1 }, { key: refusedKey })).status).toBe(
      404,
    );
    expect((await mutate(app.server.url, "placeOrder", { sku: "crash", qty: 1 }, { key: crashedKey })).status).toBe(
      500,
    );
    expect((await lookup(app.server, "placeOrder", refusedKey)).data).toEqual({
      state: "failed",
      status: 404,
      error: { code: "NOT_FOUND", message: "No product unknown" },
    });
    expect((await lookup(app.server, "placeOrder", crashedKey)).data).toEqual({ state: "unknown" });
  });

  it("answers only the action's own scope, unknown for another procedure, another key, or once expired, and 404 for a procedure it does not list", async () => {
    const key = globalThis.crypto.randomUUID();
    expect((await mutate(app.server.url, "placeOrder", { sku: "tea", qty: 1 }, { key })).status).toBe(200);
    expect((await lookup(app.server, "placeOrder", key, "mallory")).data).toEqual({ state: "unknown" });
    expect((await lookup(app.server, "placeOrderAndNotify", key)).data).toEqual({ state: "unknown" });
    expect((await lookup(app.server, "flaky", key)).status).toBe(404); // not among the lookup's procedures
    expect((await lookup(app.server, "placeOrder", globalThis.crypto.randomUUID())).data).toEqual({ state: "unknown" });
    expect((await lookup(app.server, "placeOrder", key)).data).toMatchObject({ state: "completed" });
    app.later(60_001);
    expect((await lookup(app.server, "placeOrder", key)).data).toEqual({ state: "unknown" });
  });
});

describe("bad input", () => {
  it("is a 400 that says what is wrong: a malformed key, a missing path", async () => {
    const { server } = await serve("atomic");
    try {
      const badKey = await lookup(server, "placeOrder", "not a key\u00a0");
      expect(badKey.status).toBe(400);
      const noPath = await query(server.url, "idempotencyOutcome", { input: { key: globalThis.crypto.randomUUID() } });
      expect(noPath.status).toBe(400);
      expect(noPath.error?.message).toContain("procedure's path");
    } finally {
      await server.close();
    }
  });
});

describe("the resolver, on the memory store", () => {
  const at = 1_000_000;
  const request = (key: string, scope = "alice", path = "placeOrder") => ({
    id: { scope, path, key },
    fingerprint: "f",
    now: at,
  });

  it("answers running for a call whose lease outlives its TTL, as the engine holds it", async () => {
    const store = memoryStore();
    const key = globalThis.crypto.randomUUID();
    await store.claim({ ...request(key), leaseExpiresAt: at + 120_000, expiresAt: at + 60_000 });
    const procedures = ["placeOrder"];
    const lookup = outcomeLookup({ store, scope: () => "alice", procedures, now: () => at + 90_000 });
    expect(await lookup({ ctx: {}, input: { path: "placeOrder", key } })).toEqual({ state: "running" });
    const afterLease = outcomeLookup({ store, scope: () => "alice", procedures, now: () => at + 120_001 });
    expect(await afterLease({ ctx: {}, input: { path: "placeOrder", key } })).toEqual({ state: "unknown" });
  });

  it("refuses a procedure it does not list (404): its records may be scoped another way", async () => {
    const lookup = outcomeLookup({ store: memoryStore(), scope: () => "alice", procedures: ["placeOrder"] });
    const key = globalThis.crypto.randomUUID();
    await expect(lookup({ ctx: {}, input: { path: "admin.refund", key } })).rejects.toMatchObject({
      code: "NOT_FOUND",
      message: expect.stringContaining("admin.refund"),
    });
    expect(await lookup({ ctx: {}, input: { path: "placeOrder", key } })).toEqual({ state: "unknown" });
  });

  it("reads each procedure's records under that procedure's own scope: user 7 never reads org 7's refund", async () => {
    interface Ctx {
      userId: string;
      orgId: string;
    }
    const store = memoryStore();
    const key = globalThis.crypto.randomUUID();
    // Org 7 refunded with this key (its middleware scopes by organisation); user 7 belongs to another org.
    const claimed = await store.claim({
      ...request(key, "7", "admin.refund"),
      leaseExpiresAt: at + 60_000,
      expiresAt: at + 60_000,
    });
    if (claimed.status !== "claimed") throw new Error("the fixture's claim failed");
    const refunded = { status: 200, body: JSON.stringify({ result: { refundId: 1 } }) };
    await store.complete(request(key, "7", "admin.refund").id, claimed.fence, refunded, at + 60_000);

    const lookup = outcomeLookup<Ctx>({
      store,
      scope: ({ ctx }) => ctx.userId,
      procedures: { placeOrder: {}, "admin.refund": { scope: ({ ctx }) => ctx.orgId } },
      now: () => at,
    });
    const input = { path: "admin.refund", key };
    expect(await lookup({ ctx: { userId: "7", orgId: "acme" }, input })).toEqual({ state: "unknown" });
    expect(await lookup({ ctx: { userId: "1", orgId: "7" }, input })).toEqual({
      state: "completed",
      data: { refundId: 1 },
    });
  });

  it("refuses to be built with a listed procedure that has no scope", () => {
    expect(() => outcomeLookup({ store: memoryStore(), procedures: { placeOrder: {} } })).toThrow(
      "outcomeLookup(): placeOrder has no scope",
    );
  });
});
