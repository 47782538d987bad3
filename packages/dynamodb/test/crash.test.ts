/**
 * A process killed mid-request (SIGKILL) with its claim in DynamoDB: retries are told to come back (409,
 * Retry-After) until its lease ends, then exactly one takes over; the dead owner's fence is refused if it ever
 * completes.
 */
import { serveFetch, spawnScript } from "@idemkit/testkit";
import { expect, it } from "vitest";
import { dynamoStore } from "../src/index.js";
import { charge, shop } from "./shop.js";
import { dynamoForThisFile } from "./tables.js";

const dynamo = dynamoForThisFile();

it("409 until the killed call's lease ends, then one takeover; the dead owner is fenced out", async () => {
  const leaseMs = 60_000;
  const child = spawnScript(new URL("./crash-child.ts", import.meta.url), {
    DYNAMODB_ENDPOINT: dynamo.server.endpoint,
    IDEMKIT_TABLE: dynamo.tableName,
    IDEMKIT_LEASE_MS: String(leaseMs),
  });
  const childUrl = await child.next("LISTENING");
  const key = globalThis.crypto.randomUUID();
  const lost = charge(childUrl, 4200, key).catch((error: unknown) => error);
  await child.next("HOLDING");
  await child.kill();
  expect(await lost).toBeInstanceOf(Error);

  const store = dynamoStore(dynamo);
  const id = { scope: "alice", path: "charge", key };
  const dead = await store.get(id);
  expect(dead).toMatchObject({ state: "in_progress" });

  // The process that replaces it, on a clock the test moves.
  let skewMs = 0;
  const app = shop(dynamo.client, dynamo.tableName, { leaseMs, now: () => Date.now() + skewMs });
  const served = await serveFetch(app.handler);
  try {
    const early = await charge(served.url, 4200, key);
    // The lease only bounds a crashed call: the client is asked back soon, and takes over once it ended.
    expect(early).toMatchObject({ status: 409, replayed: null, retryAfter: expect.stringMatching(/^\d+$/) });
    expect(app.charges).toEqual([]);

    skewMs = leaseMs;
    const takeover = await charge(served.url, 4200, key);
    expect(takeover).toMatchObject({ status: 200, replayed: null, body: { result: { data: { charged: 4200 } } } });
    const again = await charge(served.url, 4200, key);
    expect(again).toMatchObject({ status: 200, replayed: "true", body: takeover.body });
    expect(app.charges).toEqual(["alice:4200"]);

    // Were the killed owner to come back now, its result would not land, nor would its release.
    const deadFence = dead?.fence ?? Number.NaN;
    expect(await store.complete(id, deadFence, { status: 200, body: '{"stale":true}' }, Date.now() + 60_000)).toBe(
      false,
    );
    expect(await store.release(id, deadFence)).toBe(false);
    expect((await charge(served.url, 4200, key)).body).toEqual(takeover.body);
  } finally {
    await served.close();
  }
});
