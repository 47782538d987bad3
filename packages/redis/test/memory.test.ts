/**
 * Redis over `maxmemory` under `noeviction` (the policy the README asks for): a claim is refused before it writes
 * anything, and the procedure is answered 503 without running; a call that already ran still stores its answer.
 */

import { serveFetch } from "@idemkit/testkit";
import { createClient } from "redis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { redisStore } from "../src/index.js";
import { CLIENTS, type ConnectedClient, connect, type RunningRedis, startRedis } from "./clients.js";
import { charge, shop } from "./shop.js";

// These change the server's memory limit: not one at REDIS_URL, which is not the tests' to reconfigure.
describe.skipIf(Boolean(process.env.REDIS_URL))("a store whose Redis is out of memory", () => {
  let server: RunningRedis;
  let admin: ReturnType<typeof createClient>;
  beforeAll(async () => {
    server = await startRedis();
    admin = createClient({ url: server.url });
    await admin.connect();
    await admin.configSet("maxmemory-policy", "noeviction");
  });
  afterAll(async () => {
    await admin?.configSet("maxmemory", "0").catch(() => {});
    admin?.destroy();
    await server?.stop();
  });
  beforeEach(async () => {
    await admin.configSet("maxmemory", "0");
  });

  /** Puts Redis over its limit: one byte, less than it already uses. */
  const exhaust = () => admin.configSet("maxmemory", "1");

  describe.each(CLIENTS)("Redis over maxmemory (%s)", (name) => {
    let connected: ConnectedClient;
    beforeAll(async () => {
      connected = await connect(name, server.url);
    });
    afterAll(async () => {
      await connected?.close();
    });

    it("refuses a claim with an error that says why, and writes nothing", async () => {
      const prefix = `oom:${globalThis.crypto.randomUUID()}:`;
      const store = redisStore({ client: connected.client, prefix });
      const id = { scope: "alice", path: "charge", key: "k" };
      const now = Date.now();
      const request = { id, fingerprint: "fp", now, leaseExpiresAt: now + 30_000, expiresAt: now + 60_000 };
      await exhaust();
      await expect(admin.set(`${prefix}plain`, "x")).rejects.toThrow(/OOM/);
      await expect(store.claim(request)).rejects.toThrow(
        /over its maxmemory.*refused the claim before writing anything/,
      );
      expect(await store.get(id)).toBeUndefined();
      expect(await admin.keys(`${prefix}*`)).toEqual([]);
      await admin.configSet("maxmemory", "0");
      expect(await store.claim(request)).toMatchObject({ status: "claimed" });
    });

    it("answers the procedure 503 without running it, and runs it once Redis has room again", async () => {
      const app = shop(connected.client);
      const served = await serveFetch(app.handler);
      try {
        const key = globalThis.crypto.randomUUID();
        await exhaust();
        expect(await charge(served.url, 700, key)).toMatchObject({ status: 503 });
        expect(app.charges).toEqual([]);
        await admin.configSet("maxmemory", "0");
        expect(await charge(served.url, 700, key)).toMatchObject({ status: 200, replayed: null });
        expect(app.charges).toEqual(["alice:700"]);
      } finally {
        await served.close();
      }
    });

    it("still renews a running call's lease, so it is not taken over while it works", async () => {
      const store = redisStore({ client: connected.client, prefix: `oom:${globalThis.crypto.randomUUID()}:` });
      const id = { scope: "alice", path: "charge", key: "k" };
      const now = Date.now();
      const claimed = await store.claim({
        id,
        fingerprint: "fp",
        now,
        leaseExpiresAt: now + 30_000,
        expiresAt: now + 60_000,
      });
      const fence = claimed.status === "claimed" ? claimed.fence : Number.NaN;
      await exhaust();
      expect(await store.renew(id, fence, now + 90_000)).toBe(true);
      expect(await store.get(id)).toMatchObject({ state: "in_progress", leaseExpiresAt: now + 90_000 });
    });

    it("still stores the answer of a call that ran, so its retry replays it instead of running again", async () => {
      const store = redisStore({ client: connected.client, prefix: `oom:${globalThis.crypto.randomUUID()}:` });
      const id = { scope: "alice", path: "charge", key: "k" };
      const now = Date.now();
      const claimed = await store.claim({
        id,
        fingerprint: "fp",
        now,
        leaseExpiresAt: now + 30_000,
        expiresAt: now + 60_000,
      });
      const fence = claimed.status === "claimed" ? claimed.fence : Number.NaN;
      await exhaust();
      expect(await store.complete(id, fence, { status: 200, body: '"charged"' }, now + 60_000)).toBe(true);
      expect(await store.get(id)).toMatchObject({ state: "completed", response: { body: '"charged"' } });
    });
  });
});
