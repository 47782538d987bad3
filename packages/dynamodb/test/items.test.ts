/**
 * What the DynamoDB store writes, read back from the table itself: the TTL attribute DynamoDB deletes by, answers
 * too large for one item stored in parts under their fence, fences that grow when the engine's clock does not, and
 * every read that decides something strongly consistent.
 */
import { GetItemCommand } from "@aws-sdk/client-dynamodb";
import type { RecordId } from "@idemkit/core";
import { expect, it } from "vitest";
import { dynamoStore } from "../src/index.js";
import { EXPIRY_GRACE_MS, keyOf, PART_BYTES, PARTS_OUTLAST_MS, partKeyOf, recordKeyOf } from "../src/items.js";
import { clientOf, dynamoForThisFile } from "./tables.js";

const dynamo = dynamoForThisFile();

const T0 = Date.UTC(2026, 0, 1);
const freshId = (): RecordId => ({ scope: "alice", path: "orders.place", key: globalThis.crypto.randomUUID() });
const claimAt = (id: RecordId, now: number, leaseMs = 30_000, ttlMs = 3_600_000) => ({
  id,
  fingerprint: "fp",
  now,
  leaseExpiresAt: now + leaseMs,
  expiresAt: now + ttlMs,
});
async function fenceOf(claiming: Promise<{ status: string; fence?: number }>): Promise<number> {
  const claimed = await claiming;
  expect(claimed.status).toBe("claimed");
  return Number(claimed.fence);
}

/** The item under a partition key, as DynamoDB holds it. */
async function itemAt(partitionKey: string) {
  const { Item } = await dynamo.client.send(
    new GetItemCommand({ TableName: dynamo.tableName, Key: keyOf(partitionKey), ConsistentRead: true }),
  );
  return Item;
}
const ttlOf = async (id: RecordId) => Number((await itemAt(recordKeyOf(id)))?.ttl?.N);
const seconds = (ms: number) => Math.ceil((ms + EXPIRY_GRACE_MS) / 1000);

it("keeps the TTL attribute a minute past the record's end, in seconds: its lease or its expiry, whichever is later", async () => {
  const store = dynamoStore(dynamo);
  const id = freshId();
  const fence = await fenceOf(store.claim(claimAt(id, T0, 30_000, 600_000)));
  expect(await ttlOf(id)).toBe(seconds(T0 + 600_000));
  // A lease renewed past the record's expiry carries the TTL with it: DynamoDB must not delete a running call.
  expect(await store.renew(id, fence, T0 + 900_000)).toBe(true);
  expect(await ttlOf(id)).toBe(seconds(T0 + 900_000));
  expect(await store.renew(id, fence, T0 + 60_000)).toBe(true);
  expect(await ttlOf(id)).toBe(seconds(T0 + 900_000));
  expect(await store.complete(id, fence, { status: 200, body: "{}" }, T0 + 1_200_000)).toBe(true);
  expect(await ttlOf(id)).toBe(seconds(T0 + 1_200_000));
});

it("stores an answer past an item's size in parts under its fence, each outlasting the record", async () => {
  const store = dynamoStore(dynamo);
  const id = freshId();
  const fence = await fenceOf(store.claim(claimAt(id, T0)));
  // Multi-byte characters across the parts' edges come back whole.
  const body = "é🧾".repeat(Math.ceil((2.5 * PART_BYTES) / 6));
  expect(await store.complete(id, fence, { status: 200, body }, T0 + 3_600_000)).toBe(true);
  const record = await itemAt(recordKeyOf(id));
  expect(record?.parts?.N).toBe("3");
  expect(record?.body).toBeUndefined();
  for (const index of [0, 1, 2]) {
    const part = await itemAt(partKeyOf(recordKeyOf(id), fence, index));
    expect(Number(part?.ttl?.N)).toBe(seconds(T0 + 3_600_000 + PARTS_OUTLAST_MS));
  }
  expect(await store.get(id)).toMatchObject({ state: "completed", response: { status: 200, body } });
  // A purge once the record ended takes the record first; its parts go PARTS_OUTLAST_MS (30 days) later.
  await store.purgeExpired({ now: T0 + 3_600_000 });
  expect(await store.get(id)).toBeUndefined();
  expect(await itemAt(partKeyOf(recordKeyOf(id), fence, 0))).toBeDefined();
  await store.purgeExpired({ now: T0 + 3_600_000 + PARTS_OUTLAST_MS });
  expect(await itemAt(partKeyOf(recordKeyOf(id), fence, 0))).toBeUndefined();
});

it("leaves the live record alone when a fenced-out owner completes with a large answer", async () => {
  const store = dynamoStore(dynamo);
  const id = freshId();
  const stale = await fenceOf(store.claim(claimAt(id, T0)));
  const live = await fenceOf(store.claim(claimAt(id, T0 + 30_000)));
  expect(await store.complete(id, stale, { status: 200, body: "s".repeat(PART_BYTES + 1) }, T0 + 3_600_000)).toBe(
    false,
  );
  expect(await store.complete(id, live, { status: 201, body: '"live"' }, T0 + 3_600_000)).toBe(true);
  expect(await store.get(id)).toMatchObject({ fence: live, response: { status: 201, body: '"live"' } });
});

it("gives a greater fence when the claiming host's clock is behind the key's last claim", async () => {
  const store = dynamoStore(dynamo);
  const id = freshId();
  const first = await fenceOf(store.claim(claimAt(id, T0)));
  expect(await store.release(id, first)).toBe(true);
  // Another host, its clock a minute behind: the released record's fence still bounds the next one from below.
  const behind = await fenceOf(store.claim(claimAt(id, T0 - 60_000)));
  expect(behind).toBeGreaterThan(first);
  expect(await store.release(id, first)).toBe(false);
  expect(await store.get(id)).toMatchObject({ state: "in_progress", fence: behind });
});

/** A client of this file's dynalite whose commands are logged as `commands` (their name and input) are sent. */
function watchedClient() {
  const commands: Array<{ name: string; input: Record<string, unknown> }> = [];
  const client = clientOf(dynamo.server.endpoint);
  client.middlewareStack.add(
    (next, context) => async (args) => {
      commands.push({ name: String(context.commandName), input: args.input as Record<string, unknown> });
      return next(args);
    },
    { step: "initialize" },
  );
  return { client, commands };
}

it("reads strongly consistent wherever a read decides: a claim's and a record's", async () => {
  const { client, commands } = watchedClient();
  try {
    const store = dynamoStore({ client, tableName: dynamo.tableName });
    const id = freshId();
    const fence = await fenceOf(store.claim(claimAt(id, T0)));
    await store.claim(claimAt(id, T0 + 1));
    await store.complete(id, fence, { status: 200, body: "b".repeat(PART_BYTES + 1) }, T0 + 1_000);
    await store.get(id);
    const reads = commands.filter(({ name }) => name === "GetItemCommand");
    // The claim that found the record running, the record and its part: each read strongly consistent.
    expect(reads.length).toBeGreaterThanOrEqual(3);
    expect(reads.every(({ input }) => input.ConsistentRead === true)).toBe(true);
  } finally {
    client.destroy();
  }
});

it("takes the record DynamoDB returns with a failed claim, and reads nothing more", async () => {
  // dynalite predates ReturnValuesOnConditionCheckFailure: here the failure carries the item, as DynamoDB's does.
  const { client, commands } = watchedClient();
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        const { Key, TableName, ReturnValuesOnConditionCheckFailure } = args.input as Record<string, never>;
        if ((error as Error).name === "ConditionalCheckFailedException" && ReturnValuesOnConditionCheckFailure) {
          const { Item } = await dynamo.client.send(new GetItemCommand({ TableName, Key, ConsistentRead: true }));
          Object.assign(error as object, { Item });
        }
        throw error;
      }
    },
    { step: "initialize", priority: "low" },
  );
  try {
    const store = dynamoStore({ client, tableName: dynamo.tableName });
    const id = freshId();
    const fence = await fenceOf(store.claim(claimAt(id, T0)));
    await store.complete(id, fence, { status: 201, body: '"placed"' }, T0 + 3_600_000);
    commands.length = 0;
    expect(await store.claim(claimAt(id, T0 + 1))).toEqual({
      status: "exists",
      record: {
        state: "completed",
        fingerprint: "fp",
        fence,
        response: { status: 201, body: '"placed"' },
        expiresAt: T0 + 3_600_000,
      },
    });
    expect(commands.map(({ name }) => name)).toEqual(["UpdateItemCommand"]);
  } finally {
    client.destroy();
  }
});

it("knows its own claim and completion when the SDK sent them again after an answer it lost", async () => {
  const { client, commands } = watchedClient();
  // Each write lands, then its answer is lost once (a 500), so the SDK's retry sends it again.
  const lost = new Set<string>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const answer = await next(args);
      const write = `${context.commandName} ${JSON.stringify((args.input as { UpdateExpression?: string }).UpdateExpression)}`;
      if (context.commandName === "UpdateItemCommand" && !lost.has(write)) {
        lost.add(write);
        throw Object.assign(new Error("We encountered an internal error."), {
          name: "InternalServerError",
          $fault: "server",
          $metadata: { httpStatusCode: 500 },
        });
      }
      return answer;
    },
    { step: "deserialize" },
  );
  try {
    const store = dynamoStore({ client, tableName: dynamo.tableName });
    const id = freshId();
    const claimed = await store.claim(claimAt(id, T0));
    expect(claimed).toMatchObject({ status: "claimed" });
    expect(commands.filter(({ name }) => name === "UpdateItemCommand")).toHaveLength(1);
    const fence = claimed.status === "claimed" ? claimed.fence : Number.NaN;
    expect(await dynamoStore(dynamo).claim(claimAt(id, T0 + 1))).toMatchObject({ status: "exists" });
    expect(await store.complete(id, fence, { status: 201, body: '"placed"' }, T0 + 3_600_000)).toBe(true);
    expect(await store.get(id)).toMatchObject({ state: "completed", fence, response: { status: 201 } });
    expect(lost.size).toBe(2);
  } finally {
    client.destroy();
  }
});
