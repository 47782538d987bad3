/**
 * What the store leaves to Redis: the expiry it sets on each record (a minute past the record's end by the
 * engine's clock, mapped onto Redis's), times that are not whole milliseconds, and keys that are not records.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { redisStore } from "../src/index.js";
import { EXPIRY_GRACE_MS } from "../src/scripts.js";
import { type ConnectedClient, connect, type RunningRedis, startRedis } from "./clients.js";

let server: RunningRedis;
let connected: ConnectedClient;
let raw: ConnectedClient;
beforeAll(async () => {
  server = await startRedis();
  connected = await connect("node-redis", server.url);
  raw = await connect("ioredis", server.url);
});
afterAll(async () => {
  await connected?.close();
  await raw?.close();
  await server?.stop();
});

const LEASE_MS = 30_000;
const TTL_MS = 600_000;
/** The Redis expiry left on the only key under `prefix`, in ms. */
async function expiryLeft(prefix: string): Promise<number> {
  const redis = raw.client as import("ioredis").Redis;
  const [key] = await redis.keys(`${prefix}*`);
  return redis.pttl(String(key));
}

it("sets Redis's expiry a minute past the record's end: its lease or TTL, after a claim, a renewal and the completion", async () => {
  // An engine clock an hour ahead of Redis's: the mapping, not the clocks, decides.
  const clockAhead = 3_600_000;
  const now = Date.now() + clockAhead;
  const prefix = `expiry:${globalThis.crypto.randomUUID()}:`;
  const store = redisStore({ client: connected.client, prefix });
  const id = { scope: "alice", path: "charge", key: "k" };
  const near = (ms: number) => [ms - 2_000, ms + 10] as const;

  const claimed = await store.claim({
    id,
    fingerprint: "fp",
    now,
    leaseExpiresAt: now + LEASE_MS,
    expiresAt: now + 10_000,
  });
  const fence = claimed.status === "claimed" ? claimed.fence : Number.NaN;
  const afterClaim = await expiryLeft(prefix);
  expect(afterClaim).toBeGreaterThan(near(LEASE_MS + EXPIRY_GRACE_MS)[0]);
  expect(afterClaim).toBeLessThan(near(LEASE_MS + EXPIRY_GRACE_MS)[1]);

  expect(await store.renew(id, fence, now + 4 * LEASE_MS)).toBe(true);
  const afterRenew = await expiryLeft(prefix);
  expect(afterRenew).toBeGreaterThan(near(4 * LEASE_MS + EXPIRY_GRACE_MS)[0]);
  expect(afterRenew).toBeLessThan(near(4 * LEASE_MS + EXPIRY_GRACE_MS)[1]);

  expect(await store.complete(id, fence, { status: 200, body: "{}" }, now + TTL_MS)).toBe(true);
  const afterComplete = await expiryLeft(prefix);
  expect(afterComplete).toBeGreaterThan(near(TTL_MS + EXPIRY_GRACE_MS)[0]);
  expect(afterComplete).toBeLessThan(near(TTL_MS + EXPIRY_GRACE_MS)[1]);
});

it("takes times that are not whole milliseconds (a clock built on performance.now())", async () => {
  const store = redisStore({ client: connected.client, prefix: `fraction:${globalThis.crypto.randomUUID()}:` });
  const id = { scope: "alice", path: "charge", key: "k" };
  const now = performance.timeOrigin + performance.now() + 0.37;
  const claimed = await store.claim({
    id,
    fingerprint: "fp",
    now,
    leaseExpiresAt: now + 30_000.5,
    expiresAt: now + 60_000.25,
  });
  expect(claimed).toMatchObject({ status: "claimed" });
  const fence = claimed.status === "claimed" ? claimed.fence : Number.NaN;
  expect(await store.renew(id, fence, now + 90_000.75)).toBe(true);
  expect(await store.complete(id, fence, { status: 200, body: "{}" }, now + 60_000.25)).toBe(true);
  expect(await store.get(id)).toMatchObject({ state: "completed" });
});

it("purges around keys under its prefix that are not records, and refuses a prefix that would be a hash tag", async () => {
  const prefix = `mixed:${globalThis.crypto.randomUUID()}:`;
  await (raw.client as import("ioredis").Redis).set(`${prefix}{not-a-record}`, "x");
  const store = redisStore({ client: connected.client, prefix });
  expect(await store.purgeExpired({ now: Date.now() })).toBe(0);
  expect(() => redisStore({ client: connected.client, prefix: "app:{tenant}:" })).toThrow(/braces/);
});
