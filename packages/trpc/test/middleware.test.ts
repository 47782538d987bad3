/**
 * The server contract (DESIGN.md §2), row by row, over real HTTP (tRPC's fetch adapter behind node:http on
 * 127.0.0.1) against a real PostgreSQL server.
 */
import { memoryStore } from "@idemkit/core";
import { drizzleStore } from "@idemkit/drizzle";
import { openPostgres, type ServedHandler, serveFetch } from "@idemkit/testkit";
import { createTRPCClient, httpLink } from "@trpc/client";
import { initTRPC } from "@trpc/server";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import superjson from "superjson";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { z } from "zod";
import { idempotency, withIdempotencyKey } from "../src/index.js";
import { type AppOptions, type AppRouter, BUSINESS_TABLES, createApp } from "./app.js";
import { mutate, query } from "./client.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
const servers: ServedHandler[] = [];

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 10 });
  await database.query(BUSINESS_TABLES);
});
afterAll(() => database.close());
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function start(options: Partial<AppOptions> = {}) {
  const app = createApp({ db: database.db, ...options });
  const server = await serveFetch(app.handler);
  servers.push(server);
  return { ...app, url: server.url };
}

async function ordersOf(user: string): Promise<number> {
  const [row] = await database.query<{ n: number }>("select count(*)::int as n from orders where user_id = $1", [user]);
  return row?.n ?? 0;
}

async function recordsFor(key: string): Promise<number> {
  const [row] = await database.query<{ n: number }>("select count(*)::int as n from idempotency_keys where key = $1", [
    key,
  ]);
  return row?.n ?? 0;
}

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

const user = () => `user-${globalThis.crypto.randomUUID()}`;

describe("keys", () => {
  it("refuses a protected mutation without a key: 400 naming the header and the procedure, nothing stored", async () => {
    const app = await start();
    const alice = user();
    const answer = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key: null, user: alice });
    expect(answer.status).toBe(400);
    expect(answer.error?.message).toMatch(/Idempotency-Key.*placeOrder/);
    expect(answer.error?.data.idempotency).toEqual({
      code: "KEY_MISSING",
      retryable: false,
      resend: "never",
      retryAfterMs: null,
    });
    expect(app.executions.get("placeOrder")).toBeUndefined();
    expect(await ordersOf(alice)).toBe(0);
  });

  it.each([
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
    ["a tab (control character)", "abc\tdef"],
    ["non-ASCII", "cl\u00e9"],
  ])("refuses a key that is %s with 400 KEY_INVALID", async (_, key) => {
    const app = await start();
    const answer = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key });
    expect(answer.status).toBe(400);
    expect(answer.error?.data.idempotency).toMatchObject({ code: "KEY_INVALID" });
    expect(app.executions.get("placeOrder")).toBeUndefined();
  });

  it("accepts the key as a structured-field string: quoted and bare are the same key", async () => {
    const app = await start();
    const key = globalThis.crypto.randomUUID();
    const first = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key: `"${key}"` });
    const second = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key });
    expect(first.status).toBe(200);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
  });
});

describe("execution and replay (atomic mode)", () => {
  it("runs the first request once and replays duplicates byte for byte, marked Idempotent-Replayed", async () => {
    const app = await start();
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const first = await mutate(app.url, "placeOrder", { sku: "A", qty: 2 }, { key, user: alice });
    expect(first.status).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    for (let i = 0; i < 3; i++) {
      const again = await mutate(app.url, "placeOrder", { qty: 2, sku: "A" }, { key, user: alice });
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(again.text).toBe(first.text);
    }
    expect(app.executions.get("placeOrder")).toBe(1);
    expect(await ordersOf(alice)).toBe(1);
    expect(app.events.map((event) => event.type)).toEqual(["executed", "replayed", "replayed", "replayed"]);
    for (const event of app.events) expect(event).toMatchObject({ scope: alice, path: "placeOrder", key });
  });

  it("replays from the database when the first answer came from another instance", async () => {
    const first = await start();
    const second = await start();
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const original = await mutate(first.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    const replay = await mutate(second.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.text).toBe(original.text);
    expect(second.executions.get("placeOrder")).toBeUndefined();
  });

  it("refuses the same key with another input: 422, nothing runs, the first result stays", async () => {
    const app = await start();
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const first = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    const other = await mutate(app.url, "placeOrder", { sku: "A", qty: 3 }, { key, user: alice });
    expect(other.status).toBe(422);
    expect(other.error?.data.idempotency).toMatchObject({ code: "FINGERPRINT_MISMATCH", retryable: false });
    expect(app.events.at(-1)).toEqual({ type: "mismatch", scope: alice, path: "placeOrder", key });
    expect(app.executions.get("placeOrder")).toBe(1);
    expect(await ordersOf(alice)).toBe(1);
    const replay = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    expect(replay.text).toBe(first.text);
  });

  it("stores a 4xx thrown by the procedure and replays it, with the procedure's writes rolled back", async () => {
    const app = await start();
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const first = await mutate(app.url, "placeOrder", { sku: "unknown", qty: 1 }, { key, user: alice });
    expect(first.status).toBe(404);
    const again = await mutate(app.url, "placeOrder", { sku: "unknown", qty: 1 }, { key, user: alice });
    expect(again.status).toBe(404);
    expect(again.error?.message).toBe("No product unknown");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(app.executions.get("placeOrder")).toBe(1);
    expect(await ordersOf(alice)).toBe(0);
    expect(await recordsFor(key)).toBe(1);
  });

  it("stores nothing when the input fails validation: 400, and the key stays free", async () => {
    const app = await start();
    const key = globalThis.crypto.randomUUID();
    const invalid = await mutate(app.url, "placeOrder", { sku: "A", qty: 0 }, { key });
    expect(invalid.status).toBe(400);
    expect(app.executions.get("placeOrder")).toBeUndefined();
    expect(await recordsFor(key)).toBe(0);
  });

  it("releases the key after a 5xx, so the retry runs again and its result is stored", async () => {
    const app = await start();
    const key = globalThis.crypto.randomUUID();
    const failed = await mutate(app.url, "flaky", { n: 7 }, { key });
    expect(failed.status).toBe(500);
    expect(await recordsFor(key)).toBe(0);
    const retried = await mutate(app.url, "flaky", { n: 7 }, { key });
    expect(retried.status).toBe(200);
    expect(retried.data).toEqual({ n: 7 });
    const replayed = await mutate(app.url, "flaky", { n: 7 }, { key });
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    expect(app.executions.get("flaky")).toBe(2);
    expect(app.events.map((event) => event.type)).toEqual(["released", "executed", "replayed"]);
  });

  it("rolls back the writes of a procedure that crashes with an unknown error, and releases the key", async () => {
    const app = await start();
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const answer = await mutate(app.url, "placeOrder", { sku: "crash", qty: 1 }, { key, user: alice });
    expect(answer.status).toBe(500);
    expect(await ordersOf(alice)).toBe(0);
    expect(await recordsFor(key)).toBe(0);
  });

  it("treats a record older than its TTL as absent (injected clock)", async () => {
    let now = Date.UTC(2026, 5, 1);
    const app = await start({ ttlMs: 60_000, now: () => now });
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    now += 59_999;
    expect(
      (await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice })).headers.get(
        "idempotent-replayed",
      ),
    ).toBe("true");
    now += 1;
    const fresh = await mutate(app.url, "placeOrder", { sku: "A", qty: 9 }, { key, user: alice });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get("idempotent-replayed")).toBeNull();
    expect(await ordersOf(alice)).toBe(2);
  });

  it("keeps scopes apart: another user's key neither replays their result nor blocks", async () => {
    const held = deferred();
    let calls = 0;
    const app = await start({ hold: () => (++calls === 1 ? held.promise : Promise.resolve()) });
    const [alice, bob] = [user(), user()];
    const key = globalThis.crypto.randomUUID();
    const aliceCall = mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    await expect.poll(() => app.executions.get("placeOrder")).toBe(1);
    // Alice's request still holds her claim while Bob sends the same key.
    const bobAnswer = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: bob });
    held.resolve();
    const aliceAnswer = await aliceCall;
    expect(bobAnswer.status).toBe(200);
    expect(bobAnswer.headers.get("idempotent-replayed")).toBeNull();
    expect(bobAnswer.data).not.toEqual(aliceAnswer.data);
    expect(await ordersOf(alice)).toBe(1);
    expect(await ordersOf(bob)).toBe(1);
  });

  it("gives the procedure its key and stable sub-keys, distinct per scope", async () => {
    const app = await start();
    const key = globalThis.crypto.randomUUID();
    const alice = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: "alice-sub" });
    const aliceAgain = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: "alice-sub" });
    const bob = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: "bob-sub" });
    const chargeKey = (answer: typeof alice) => (answer.data as { chargeKey: string }).chargeKey;
    expect(chargeKey(alice)).toMatch(/^[0-9a-f]{40}$/);
    expect(chargeKey(aliceAgain)).toBe(chargeKey(alice));
    expect(chargeKey(bob)).not.toBe(chargeKey(alice));
  });

  it("leaves queries alone: no key needed, nothing stored", async () => {
    const app = await start();
    const answer = await query(app.url, "ping");
    expect(answer.status).toBe(200);
    expect(answer.data).toBe("pong");
  });

  it("refuses one key for a batch of two mutations: 400 for both, nothing runs", async () => {
    const app = await start();
    const input = JSON.stringify({
      0: superjson.serialize({ sku: "A", qty: 1 }),
      1: superjson.serialize({ sku: "B", qty: 1 }),
    });
    const response = await fetch(`${app.url}/trpc/placeOrder,placeOrder?batch=1`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": globalThis.crypto.randomUUID() },
      body: input,
    });
    const body = (await response.json()) as Array<{
      error?: { json: { data: { httpStatus: number; idempotency: { code: string } } } };
    }>;
    expect(body).toHaveLength(2);
    for (const item of body) {
      expect(item.error?.json.data.httpStatus).toBe(400);
      expect(item.error?.json.data.idempotency.code).toBe("KEY_SHARED_IN_BATCH");
    }
    expect(app.executions.get("placeOrder")).toBeUndefined();
  });

  it("replays a superjson Date as a Date through the tRPC client", async () => {
    const app = await start();
    const key = globalThis.crypto.randomUUID();
    const client = createTRPCClient<AppRouter>({
      links: [
        httpLink({
          url: `${app.url}/trpc`,
          transformer: superjson,
          headers: () => ({ "idempotency-key": key, "x-user": "dates" }),
        }),
      ],
    });
    const first = await client.placeOrder.mutate({ sku: "A", qty: 1 });
    const replayed = await client.placeOrder.mutate({ sku: "A", qty: 1 });
    expect(first.createdAt).toBeInstanceOf(Date);
    expect(replayed.createdAt).toBeInstanceOf(Date);
    expect(replayed).toEqual(first);
    expect(await client.noInput.mutate()).toEqual({ at: new Date(0) });
    expect(app.executions.get("placeOrder")).toBe(1);
  });
});

describe("inputs compared by content", () => {
  async function upload(url: string, key: string, alice: string, bytes: string) {
    const form = new FormData();
    form.append("file", new File([bytes], "receipt.txt", { type: "text/plain" }));
    const response = await fetch(`${url}/trpc/upload`, {
      method: "POST",
      headers: { "idempotency-key": key, "x-user": alice },
      body: form,
    });
    return {
      status: response.status,
      replayed: response.headers.get("idempotent-replayed"),
      text: await response.text(),
    };
  }

  it("refuses another file under the same key (422) and replays the same file", async () => {
    const app = await start();
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const first = await upload(app.url, key, alice, "first receipt");
    expect(first.status).toBe(200);
    const other = await upload(app.url, key, alice, "another receipt");
    expect(other.status).toBe(422);
    const again = await upload(app.url, key, alice, "first receipt");
    expect(again).toMatchObject({ status: 200, replayed: "true", text: first.text });
    expect(app.executions.get("upload")).toBe(1);
  });
});

describe("a database error the procedure caught (postgres.js)", () => {
  beforeAll(async () => {
    await database.query("create table if not exists handles (name text primary key)");
    await database.query("insert into handles (name) values ('taken') on conflict do nothing");
  });

  it("answers the procedure's own 4xx, stored and replayed, not 503", async () => {
    const app = await start();
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const refused = await mutate(app.url, "claimHandle", { name: "taken", swallow: false }, { key, user: alice });
    expect(refused.status).toBe(400);
    expect(refused.error?.message).toBe("That handle is taken.");
    const again = await mutate(app.url, "claimHandle", { name: "taken", swallow: false }, { key, user: alice });
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([400, "true"]);
    expect(app.executions.get("claimHandle")).toBe(1);
  });

  it("answers 500 naming savepoints when the procedure swallowed the error and returned, and releases the key", async () => {
    const app = await start();
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const swallowed = await mutate(app.url, "claimHandle", { name: "taken", swallow: true }, { key, user: alice });
    expect(swallowed.status).toBe(500);
    expect(swallowed.error?.message).toMatch(/aborted its transaction.*tx\.transaction/);
    expect(swallowed.error?.data.idempotency).toBeNull();
    await mutate(app.url, "claimHandle", { name: "taken", swallow: true }, { key, user: alice });
    expect(app.executions.get("claimHandle")).toBe(2);
    expect(app.events.map((event) => event.type)).toEqual(["released", "released"]);
  });
});

describe("observers", () => {
  it("never change an outcome: with an onEvent that throws, first calls, replays, mismatches and 4xx answer as without", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const app = await start({
        observe: () => {
          throw new Error("a broken metrics exporter");
        },
      });
      const alice = user();
      const key = globalThis.crypto.randomUUID();
      const first = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
      const replay = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
      const mismatch = await mutate(app.url, "placeOrder", { sku: "B", qty: 1 }, { key, user: alice });
      const refused = await mutate(app.url, "placeOrder", { sku: "unknown", qty: 1 }, { user: alice });
      expect([first.status, replay.status, mismatch.status, refused.status]).toEqual([200, 200, 422, 404]);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expect(replay.text).toBe(first.text);
      expect(app.events.map((event) => event.type)).toEqual(["executed", "replayed", "mismatch", "executed"]);
      expect(app.executions.get("placeOrder")).toBe(2);
      expect(await ordersOf(alice)).toBe(1);
      expect(error).toHaveBeenCalledTimes(1);
    } finally {
      error.mockRestore();
    }
  });
});

describe("a store that cannot be reached", () => {
  it("answers 503 and never runs the procedure unprotected", async () => {
    const dead = postgres("postgres://nobody:nothing@127.0.0.1:9/none", { max: 1, connect_timeout: 2 });
    for (const mode of ["atomic", "lease"] as const) {
      const app = await start({ mode, store: drizzleStore({ db: drizzle(dead) }) });
      const alice = user();
      const answer = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { user: alice });
      expect(answer.status).toBe(503);
      expect(answer.error?.data.idempotency).toMatchObject({ code: "STORE_UNAVAILABLE", retryable: true });
      expect(app.executions.get("placeOrder")).toBeUndefined();
      expect(await ordersOf(alice)).toBe(0);
      expect(app.events.map((event) => event.type)).toEqual(["store_error"]);
    }
    await dead.end();
  });
});

describe("lease mode", () => {
  it("answers 409 with a short Retry-After while the first request runs, never later than its lease ends", async () => {
    const held = deferred();
    let now = Date.UTC(2026, 5, 1);
    const app = await start({ mode: "lease", leaseMs: 30_000, now: () => now, hold: () => held.promise });
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const first = mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    await expect.poll(() => app.executions.get("placeOrder")).toBe(1);
    now += 12_500;
    const busy = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    expect(busy.status).toBe(409);
    expect(busy.headers.get("retry-after")).toBe("1");
    expect(busy.error?.data.idempotency).toEqual({
      code: "IN_PROGRESS",
      retryable: true,
      resend: "retry",
      retryAfterMs: 1_000,
    });
    now += 17_100;
    const late = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    expect(late.error?.data.idempotency).toEqual({
      code: "IN_PROGRESS",
      retryable: true,
      resend: "retry",
      retryAfterMs: 400,
    });
    held.resolve();
    expect((await first).status).toBe(200);
    const replay = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(app.executions.get("placeOrder")).toBe(1);
  });

  it("answers a call still running past procedureTimeoutMs 409 to retry, keeps its key, and replays it once done", async () => {
    const held = deferred();
    let signal: AbortSignal | undefined;
    const app = await start({
      mode: "lease",
      procedureTimeoutMs: 50,
      hold: (_, given) => {
        signal = given;
        return held.promise;
      },
    });
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const first = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    expect(first.status).toBe(409);
    expect(first.headers.get("retry-after")).toBe("1");
    expect(first.error?.data.idempotency).toEqual({
      code: "IN_PROGRESS",
      retryable: true,
      resend: "retry",
      retryAfterMs: 1_000,
    });
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toMatchObject({ name: "TimeoutError" });
    // The procedure still runs: a retry may not run it again.
    expect((await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice })).status).toBe(409);
    held.resolve();
    await expect.poll(() => app.events.map((event) => event.type)).toEqual(["timed_out", "conflict", "executed"]);
    const replay = await mutate(app.url, "placeOrder", { sku: "A", qty: 1 }, { key, user: alice });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(app.executions.get("placeOrder")).toBe(1);
    expect(await ordersOf(alice)).toBe(1);
  });

  it("works the same over the memory store", async () => {
    const app = await start({ mode: "lease", store: memoryStore() });
    const key = globalThis.crypto.randomUUID();
    const first = await mutate(app.url, "noInput", undefined, { key });
    const again = await mutate(app.url, "noInput", undefined, { key });
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(app.executions.get("noInput")).toBe(1);
  });
});

describe("a result that cannot be stored, once the procedure ran", () => {
  const t = initTRPC.context<{ userId: string }>().create();

  /** A router whose `pay` charges, writes an order, and returns what plain JSON cannot keep (a Date). */
  function payRouter(mode: "lease" | "atomic", events: string[]) {
    let charges = 0;
    const protectedMutation = t.procedure.use(
      idempotency({
        store: drizzleStore({ db: database.db }),
        mode,
        scope: ({ ctx }) => ctx.userId,
        onEvent: (event) => events.push(event.type),
      }),
    );
    const router = t.router({
      pay: protectedMutation.mutation(async ({ ctx }) => {
        charges++;
        await ctx.idempotency.tx?.execute(sql`insert into orders (user_id, sku, qty) values (${ctx.userId}, 'A', 1)`);
        return { paidAt: new Date() };
      }),
    });
    return { router, charges: () => charges };
  }

  it("in lease mode keeps the key refused: called twice, the procedure ran once, and both are told RAN_WITHOUT_ANSWER", async () => {
    const events: string[] = [];
    const { router, charges } = payRouter("lease", events);
    const caller = router.createCaller(withIdempotencyKey({ userId: user() }, globalThis.crypto.randomUUID()));
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      for (let press = 0; press < 2; press++) {
        const refused = await caller.pay().catch((error: unknown) => error);
        expect(refused).toMatchObject({
          code: "INTERNAL_SERVER_ERROR",
          cause: { code: "RAN_WITHOUT_ANSWER", resend: "never" },
        });
      }
      expect(String(logged.mock.calls[0]?.[0])).toMatch(/not plain JSON/);
    } finally {
      logged.mockRestore();
    }
    expect(charges()).toBe(1);
    expect(events).toEqual(["ran_without_answer", "ran_without_answer"]);
  });

  it("in atomic mode rolls everything back, keeps nothing for the key, and says so: ROLLED_BACK", async () => {
    const events: string[] = [];
    const { router, charges } = payRouter("atomic", events);
    const alice = user();
    const key = globalThis.crypto.randomUUID();
    const caller = router.createCaller(withIdempotencyKey({ userId: alice }, key));
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const refused = await caller.pay().catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: "INTERNAL_SERVER_ERROR", cause: { code: "ROLLED_BACK", resend: "never" } });
      expect(String(logged.mock.calls[0]?.[0])).toMatch(/rolled back and nothing was kept.*not plain JSON/);
    } finally {
      logged.mockRestore();
    }
    expect(await ordersOf(alice)).toBe(0);
    expect(events).toEqual(["released"]);
    // Nothing is kept for the key: no refusal stands in the way of the next attempt, which runs (and fails alike).
    expect(await recordsFor(key)).toBe(0);
    expect(charges()).toBe(1);
  });
});

describe("the app's own database handle (dbKey)", () => {
  const t = initTRPC.context<{ db: typeof database.db; userId: string }>().create();
  const protect = (db: typeof database.db) =>
    t.procedure.use(idempotency({ store: drizzleStore({ db }), dbKey: "db", scope: ({ ctx }) => ctx.userId }));

  it("is the idempotent transaction inside a protected mutation", async () => {
    const router = t.router({
      same: protect(database.db).mutation(({ ctx }) => ctx.db === ctx.idempotency.tx),
    });
    const ctx = { db: database.db, userId: user() };
    expect(await router.createCaller(withIdempotencyKey(ctx, globalThis.crypto.randomUUID())).same()).toBe(true);
  });

  it("refuses to run when it holds another database than the store's: its writes could not join the transaction", async () => {
    const other = drizzle(postgres(database.url, { max: 1 }));
    let ran = false;
    const router = t.router({
      write: protect(other).mutation(() => {
        ran = true;
      }),
    });
    const ctx = withIdempotencyKey({ db: database.db, userId: user() }, globalThis.crypto.randomUUID());
    try {
      await expect(router.createCaller(ctx).write()).rejects.toThrow(/ctx\.db is not the database the store was given/);
      expect(ran).toBe(false);
    } finally {
      await other.$client.end();
    }
  });

  it("is refused in lease mode, which has no transaction to hand over: by the types, and at startup", () => {
    expect(() =>
      idempotency({
        store: drizzleStore({ db: database.db }),
        mode: "lease",
        // @ts-expect-error dbKey belongs to atomic mode
        dbKey: "db",
        scope: ({ ctx }: { ctx: { db: unknown; userId: string } }) => ctx.userId,
      }),
    ).toThrow(/only atomic mode has one/);
  });
});

describe("as library middleware for .concat()", () => {
  it("joins an app's own procedure, whose context has what scope reads, and protects its mutations", async () => {
    const t = initTRPC.context<{ userId: string; tenant: string }>().create();
    let runs = 0;
    // As tRPC recommends for library middleware: a procedure that states only what it needs of the context.
    const idempotent = initTRPC
      .context<{ userId: string }>()
      .create()
      .procedure.use(idempotency({ store: memoryStore(), scope: ({ ctx }) => ctx.userId }));
    const protectedMutation = t.procedure.concat(idempotent);
    const router = t.router({
      add: protectedMutation.input(z.object({ n: z.number() })).mutation(({ ctx, input }) => {
        runs += 1;
        return { n: input.n, key: ctx.idempotency.key, tenant: ctx.tenant };
      }),
    });
    const caller = router.createCaller(withIdempotencyKey({ userId: user(), tenant: "acme" }, "concat-key"));
    const first = await caller.add({ n: 1 });
    expect(await caller.add({ n: 1 })).toEqual(first);
    expect(first).toEqual({ n: 1, key: "concat-key", tenant: "acme" });
    expect(runs).toBe(1);
  });
});

describe("context shapes", () => {
  it("names the fix when the context has a req it cannot read headers from", async () => {
    const t = initTRPC.context<{ req: object }>().create();
    const router = t.router({
      write: t.procedure.use(idempotency({ store: memoryStore(), scope: () => "alice" })).mutation(() => "ran"),
    });
    await expect(router.createCaller({ req: {} }).write()).rejects.toThrow(/`req` without readable headers/);
  });
});
