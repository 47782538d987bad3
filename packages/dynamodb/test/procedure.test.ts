import { CreateTableCommand } from "@aws-sdk/client-dynamodb";
import { withIdempotency } from "@idemkit/core/fetch";
import { gate, serveFetch, startFaultProxy } from "@idemkit/testkit";
import { idempotency } from "@idemkit/trpc";
import { describe, expect, it, vi } from "vitest";
import { dynamoStore } from "../src/index.js";
import { charge, shop } from "./shop.js";
import { clientOf, dynamoForThisFile, freshTable, startDynamo } from "./tables.js";

const dynamo = dynamoForThisFile();

describe("a lease-mode procedure on dynamoStore", () => {
  it("runs once per key: the first call runs, a repeat replays the stored answer, another user's is its own", async () => {
    const app = shop(dynamo.client, dynamo.tableName);
    const served = await serveFetch(app.handler);
    try {
      const key = globalThis.crypto.randomUUID();
      const first = await charge(served.url, 1250, key);
      const again = await charge(served.url, 1250, key);
      expect(first).toMatchObject({ status: 200, replayed: null });
      expect(again).toMatchObject({ status: 200, replayed: "true" });
      expect(again.body).toEqual(first.body);
      expect((await charge(served.url, 1250, key, { user: "bob" })).replayed).toBeNull();
      expect((await charge(served.url, 999, key)).status).toBe(422);
      expect(app.charges).toEqual(["alice:1250", "bob:1250"]);
    } finally {
      await served.close();
    }
  });

  it("never runs concurrent duplicates twice: they wait for the first, or are told to come back", async () => {
    const release = gate();
    const app = shop(dynamo.client, dynamo.tableName, { hold: () => release.opened });
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

  it("stores an answer larger than an item holds in parts, and replays it byte for byte", async () => {
    const app = shop(dynamo.client, dynamo.tableName);
    const served = await serveFetch(app.handler);
    try {
      const key = globalThis.crypto.randomUUID();
      const first = await charge(served.url, 300, key, { answerBytes: 1_000_000 });
      expect(first.status).toBe(200);
      expect(JSON.stringify(first.body).length).toBeGreaterThan(400_000);
      const again = await charge(served.url, 300, key, { answerBytes: 1_000_000 });
      expect(again).toMatchObject({ status: 200, replayed: "true" });
      expect(again.body).toEqual(first.body);
      expect(app.charges).toEqual(["alice:300"]);
    } finally {
      await served.close();
    }
  });

  it("protects a Fetch route handler: one order per key, the duplicate answered the same status, headers and body", async () => {
    const orders: unknown[] = [];
    const route = withIdempotency(
      async (request) => {
        const order = { orderId: orders.push(await request.json()) };
        return Response.json(order, { status: 201, headers: { location: `/orders/${order.orderId}` } });
      },
      { store: dynamoStore(dynamo), scope: () => "alice", path: () => "/api/orders" },
    );
    const served = await serveFetch(route);
    try {
      const key = globalThis.crypto.randomUUID();
      const post = () =>
        fetch(`${served.url}/api/orders`, {
          method: "POST",
          headers: { "idempotency-key": key, "content-type": "application/json" },
          body: JSON.stringify({ sku: "mug" }),
        });
      const [first, again] = [await post(), await post()];
      expect([first.status, again.status]).toEqual([201, 201]);
      expect(again.headers.get("location")).toBe(first.headers.get("location"));
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(await again.json()).toEqual(await first.json());
      expect(orders).toHaveLength(1);
    } finally {
      await served.close();
    }
  });

  it("refuses atomic mode, by the types and when the middleware is built, and says to use lease mode", () => {
    expect(() =>
      idempotency({
        store: dynamoStore(dynamo),
        scope: () => "alice",
        // @ts-expect-error a DynamoDB store has no atomic mode
        mode: "atomic",
      }),
    ).toThrow(/no atomic mode; use mode: 'lease'/);
  });
});

// A table never made (or made in another region), or made with another key: the operator's to fix, so clients are
// told it will not help to come back (not a 503 they would retry for nothing), and the log says what to do, once.
describe("dynamoStore on a table it cannot use", () => {
  const tables = {
    "a table that does not exist": async () => `${dynamo.tableName}-never-made`,
    "a table keyed on another attribute": async () => {
      const TableName = `${dynamo.tableName}-keyed-by-id`;
      await dynamo.client.send(
        new CreateTableCommand({
          TableName,
          AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
          KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
          BillingMode: "PAY_PER_REQUEST",
        }),
      );
      return TableName;
    },
  };
  it.each([
    ["a table that does not exist", /table \S+-never-made is not there in the client's region .*tableDefinition/],
    [
      "a table keyed on another attribute",
      /table \S+-keyed-by-id is keyed otherwise .*partition key pk, a string, alone/,
    ],
  ] as const)("answers 500 STORE_MISCONFIGURED on %s, logs why once, and never runs the charge", async (which, why) => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const app = shop(dynamo.client, await tables[which]());
    const served = await serveFetch(app.handler);
    try {
      for (const key of [globalThis.crypto.randomUUID(), globalThis.crypto.randomUUID()]) {
        const refused = await charge(served.url, 400, key);
        expect(refused).toMatchObject({ status: 500, retryAfter: null });
        expect(refused.body.error.data.idempotency).toEqual({
          code: "STORE_MISCONFIGURED",
          retryable: false,
          resend: "never",
          retryAfterMs: null,
        });
        expect(refused.body.error.message).not.toContain(dynamo.tableName);
      }
      expect(app.charges).toEqual([]);
      expect(logged).toHaveBeenCalledTimes(1);
      expect(String(logged.mock.calls[0]?.[0])).toMatch(why);
    } finally {
      logged.mockRestore();
      await served.close();
    }
  });
});

// These freeze dynalite and answer for it: not an endpoint at DYNAMODB_ENDPOINT, which is not the tests' to stop.
describe.skipIf(Boolean(process.env.DYNAMODB_ENDPOINT))("dynamoStore when DynamoDB fails", () => {
  it("answers 503 with Retry-After while DynamoDB hangs, never running the charge, and serves once it answers", async () => {
    const own = await startDynamo();
    const ownClient = clientOf(own.endpoint);
    const ownTable = await freshTable(ownClient);
    const app = shop(ownClient, ownTable, { storeTimeoutMs: 1_000 });
    const served = await serveFetch(app.handler);
    try {
      own.pause?.();
      const key = globalThis.crypto.randomUUID();
      const down = await charge(served.url, 700, key);
      expect(down).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/) });
      expect(app.charges).toEqual([]);

      own.resume?.();
      await expect.poll(async () => (await charge(served.url, 700, key)).status, { timeout: 10_000 }).toBe(200);
      expect(app.charges).toEqual(["alice:700"]);
    } finally {
      own.resume?.();
      await served.close();
      ownClient.destroy();
      await own.stop();
    }
  });

  it("answers 503 with Retry-After when DynamoDB throttles past the client's retries, then runs the charge once", async () => {
    const proxy = await startFaultProxy(dynamo.server.endpoint);
    // The SDK's own retries: three attempts, each throttled here.
    const throttled = clientOf(proxy.url, { maxAttempts: 3 });
    const app = shop(throttled, dynamo.tableName, { storeTimeoutMs: 10_000 });
    const served = await serveFetch(app.handler);
    try {
      const throttling = {
        kind: "answer" as const,
        status: 400,
        headers: { "content-type": "application/x-amz-json-1.0" },
        body: JSON.stringify({
          __type: "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
          message: "The level of configured provisioned throughput for the table was exceeded.",
        }),
      };
      proxy.inject(throttling, throttling, throttling);
      const key = globalThis.crypto.randomUUID();
      const refused = await charge(served.url, 900, key);
      expect(refused).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/) });
      expect(proxy.requests.filter((request) => request.fault === "answer")).toHaveLength(3);
      expect(app.charges).toEqual([]);

      const retried = await charge(served.url, 900, key);
      expect(retried).toMatchObject({ status: 200, replayed: null });
      expect(app.charges).toEqual(["alice:900"]);
    } finally {
      await served.close();
      throttled.destroy();
      await proxy.close();
    }
  });
});
