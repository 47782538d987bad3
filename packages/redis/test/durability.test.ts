/**
 * What a Redis restart does to the records: with an append-only file synced on every write, a record survives a
 * crash (SIGKILL) and is replayed after it by another instance; without persistence it is gone, and a retry after
 * the restart runs the procedure again. (A SIGKILL leaves the operating system's page cache, so `everysec` would
 * pass as well: what `always` adds, against a power loss, is not something a test here can show.)
 */
import { serveFetch } from "@idemkit/testkit";
import { describe, expect, it } from "vitest";
import { connect, startRedis } from "./clients.js";
import { charge, shop } from "./shop.js";

/** Charges once, crashes Redis and starts it again, then sends the same charge to another instance of the shop. */
async function chargeAcrossACrash(appendfsync: "always" | undefined) {
  const server = await startRedis(appendfsync ? { appendfsync } : {});
  const prefix = `durability:${globalThis.crypto.randomUUID()}:`;
  const before = await connect("node-redis", server.url);
  const first = shop(before.client, { prefix });
  const servedFirst = await serveFetch(first.handler);
  const key = globalThis.crypto.randomUUID();
  try {
    const answer = await charge(servedFirst.url, 900, key);
    await server.kill?.();
    await server.restart?.();
    // Another instance (one that replays from its own memory would hide what Redis lost).
    const after = await connect("node-redis", server.url);
    const second = shop(after.client, { prefix });
    const servedSecond = await serveFetch(second.handler);
    try {
      const retry = await charge(servedSecond.url, 900, key);
      return { answer, retry, charges: [...first.charges, ...second.charges] };
    } finally {
      await servedSecond.close();
      await after.close();
    }
  } finally {
    await servedFirst.close();
    await before.close();
    await server.stop();
  }
}

// These crash Redis: not one at REDIS_URL, which is not the tests' to crash.
describe.skipIf(Boolean(process.env.REDIS_URL))("Redis crashed under the store", () => {
  it("with appendfsync always, a record survives a crash of Redis: the retry is a replay", async () => {
    const { answer, retry, charges } = await chargeAcrossACrash("always");
    expect(retry).toMatchObject({ status: 200, replayed: "true", body: answer.body });
    expect(charges).toEqual(["alice:900"]);
  });

  it("without persistence, a crash of Redis forgets the record: the retry runs again", async () => {
    const { retry, charges } = await chargeAcrossACrash(undefined);
    expect(retry).toMatchObject({ status: 200, replayed: null });
    expect(charges).toEqual(["alice:900", "alice:900"]);
  });
});
