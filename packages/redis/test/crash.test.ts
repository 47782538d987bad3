/**
 * A process killed mid-request (SIGKILL) with its claim in Redis: retries are told to come back (409, Retry-After
 * 1 s) until its lease ends, then exactly one takes over; the dead owner's fence is refused if it ever completes.
 */
import { serveFetch, spawnScript } from "@idemkit/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { redisStore } from "../src/index.js";
import { type ConnectedClient, connect, type RunningRedis, startRedis } from "./clients.js";
import { charge, shop } from "./shop.js";

let server: RunningRedis;
let connected: ConnectedClient;
beforeAll(async () => {
  server = await startRedis();
  connected = await connect("ioredis", server.url);
});
afterAll(async () => {
  await connected?.close();
  await server?.stop();
});

it("409 until the killed call's lease ends, then one takeover; the dead owner is fenced out", async () => {
  const leaseMs = 60_000;
  const prefix = `crash:${globalThis.crypto.randomUUID()}:`;
  const child = spawnScript(new URL("./crash-child.ts", import.meta.url), {
    REDIS_URL: server.url,
    IDEMKIT_PREFIX: prefix,
    IDEMKIT_LEASE_MS: String(leaseMs),
  });
  const childUrl = await child.next("LISTENING");
  const key = globalThis.crypto.randomUUID();
  const lost = charge(childUrl, 4200, key).catch((error: unknown) => error);
  expect(await child.next("HOLDING")).toBe(key);
  await child.kill();
  expect(await lost).toBeInstanceOf(Error);

  // The process that replaces it, on another client (ioredis) and a clock the test moves.
  let skewMs = 0;
  const app = shop(connected.client, { prefix, leaseMs, now: () => Date.now() + skewMs });
  const served = await serveFetch(app.handler);
  try {
    const early = await charge(served.url, 4200, key);
    // The lease only bounds a crashed call: the client is asked back in a second, and takes over once it ended.
    expect(early).toMatchObject({ status: 409, replayed: null, retryAfter: "1" });
    expect(app.charges).toEqual([]);

    skewMs = leaseMs;
    const takeover = await charge(served.url, 4200, key);
    expect(takeover).toMatchObject({ status: 200, replayed: null, body: { result: { data: { charged: 4200 } } } });
    const again = await charge(served.url, 4200, key);
    expect(again).toMatchObject({ status: 200, replayed: "true", body: takeover.body });
    expect(app.charges).toEqual(["alice:4200"]);

    // The killed owner held fence 1: if it came back now, its result would not land.
    const store = redisStore({ client: connected.client, prefix });
    const id = { scope: "alice", path: "charge", key };
    expect(await store.complete(id, 1, { status: 200, body: '{"stale":true}' }, Date.now() + 60_000)).toBe(false);
    expect(await store.release(id, 1)).toBe(false);
    expect((await charge(served.url, 4200, key)).body).toEqual(takeover.body);
  } finally {
    await served.close();
  }
});
