/**
 * The Redis store behind a real tRPC procedure over HTTP, in lease mode, as an app runs it: a charge at a payment
 * provider (an effect outside any database) happens once per key, however the request is repeated, on both clients.
 */
import { gate, serveFetch } from "@idemkit/testkit";
import { idempotency } from "@idemkit/trpc";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisStore } from "../src/index.js";
import { CLIENTS, type ConnectedClient, connect, type RunningRedis, startRedis } from "./clients.js";
import { charge, shop } from "./shop.js";

let server: RunningRedis;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(CLIENTS)("a lease-mode procedure on redisStore (%s)", (name) => {
  let connected: ConnectedClient;
  beforeAll(async () => {
    connected = await connect(name, server.url);
  });
  afterAll(async () => {
    await connected?.close();
  });

  it("runs once per key: the first call runs, a repeat replays the stored answer, another user's is its own", async () => {
    const app = shop(connected.client);
    const served = await serveFetch(app.handler);
    try {
      const key = globalThis.crypto.randomUUID();
      const first = await charge(served.url, 1250, key);
      const again = await charge(served.url, 1250, key);
      expect(first).toMatchObject({ status: 200, replayed: null });
      expect(again).toMatchObject({ status: 200, replayed: "true" });
      expect(again.body).toEqual(first.body);
      expect((await charge(served.url, 1250, key, "bob")).replayed).toBeNull();
      expect((await charge(served.url, 999, key)).status).toBe(422);
      expect(app.charges).toEqual(["alice:1250", "bob:1250"]);
    } finally {
      await served.close();
    }
  });

  it("never runs concurrent duplicates twice: they wait for the first, or are told to come back", async () => {
    const release = gate();
    const app = shop(connected.client, { hold: () => release.opened });
    const served = await serveFetch(app.handler);
    try {
      const key = globalThis.crypto.randomUUID();
      const first = charge(served.url, 500, key);
      await expect.poll(() => app.charges.length).toBe(1);
      const duplicates = Array.from({ length: 10 }, () => charge(served.url, 500, key));
      release.open();
      const answers = await Promise.all([first, ...duplicates]);
      expect(app.charges).toEqual(["alice:500"]);
      for (const answer of answers) expect([200, 409]).toContain(answer.status);
      expect(answers.filter((answer) => answer.status === 200 && answer.replayed === null)).toHaveLength(1);
    } finally {
      await served.close();
    }
  });
});

// These stop and start Redis: not one at REDIS_URL, which is not the tests' to stop.
describe.skipIf(Boolean(process.env.REDIS_URL))("redisStore without Redis", () => {
  it.each(CLIENTS)(
    "answers 503 and never runs the procedure unprotected, then serves once Redis is back (%s)",
    async (name) => {
      const own = await startRedis();
      const connected = await connect(name, own.url);
      const app = shop(connected.client, { storeTimeoutMs: 1_000 });
      const served = await serveFetch(app.handler);
      try {
        await own.kill?.();
        const key = globalThis.crypto.randomUUID();
        const down = await charge(served.url, 700, key);
        expect(down.status).toBe(503);
        expect(app.charges).toEqual([]);

        await own.restart?.();
        await expect.poll(async () => (await charge(served.url, 700, key)).status, { timeout: 10_000 }).toBe(200);
        expect(app.charges).toEqual(["alice:700"]);
      } finally {
        await served.close();
        await connected.close();
        await own.stop();
      }
    },
  );

  it("refuses atomic mode, by the types and when the middleware is built, and says to use lease mode", () => {
    expect(() =>
      idempotency({
        store: redisStore({ client: { evalSha: async () => 0, eval: async () => 0, hGetAll: async () => ({}) } }),
        scope: () => "alice",
        // @ts-expect-error a Redis store has no atomic mode
        mode: "atomic",
      }),
    ).toThrow(/no atomic mode; use mode: 'lease'/);
  });
});
