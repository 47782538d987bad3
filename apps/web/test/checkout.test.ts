/**
 * The demo's API on embedded PGlite with its migrations, tRPC over real HTTP (the browser tests in e2e/ drive the
 * same API through Next.js). A repeated order is replayed, not placed twice, with its lines and its one payment;
 * a mistake in the cart is answered the same way every time; an order's confirmation is sent once.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fireDuplicates } from "@idemkit/core/testing";
import { createRelay, type PublishedEvent } from "@idemkit/outbox";
import { type ServedHandler, serveFetch } from "@idemkit/testkit";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { eq } from "drizzle-orm";
import superjson from "superjson";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ORDER_PLACED, type OrderPlaced, sendConfirmation } from "../src/server/confirmations";
import { type OpenDatabase, openDatabase } from "../src/server/database";
import { armFaults } from "../src/server/faults";
import { type AppRouter, createHandler, createRouter, MAX_BODY_BYTES } from "../src/server/router";
import { orderLines, orders, payments } from "../src/server/schema";

let dataDir: string;
let database: OpenDatabase;
let server: ServedHandler;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "idemkit-web-"));
  database = await openDatabase({ dataDir });
  server = await serveFetch(createHandler(createRouter({ db: database.db })));
});
afterAll(async () => {
  await server?.close();
  await database?.close();
  await rm(dataDir, { recursive: true, force: true });
});

function clientWithKey(key: string, cookie = "uid=ada") {
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${server.url}/api/trpc`,
        transformer: superjson,
        headers: () => ({ "idempotency-key": key, cookie }),
      }),
    ],
  });
}

it("sends an order's confirmation once, however often the relay publishes its event", async () => {
  const client = clientWithKey(globalThis.crypto.randomUUID(), "uid=grace");
  const { orderId } = await client.checkout.placeOrder.mutate({ items: [{ sku: "mug", qty: 1 }] });
  const published: PublishedEvent[] = [];
  const relay = createRelay({
    db: database.db,
    publish: async (event) => {
      published.push(event);
      await sendConfirmation(database.db, event);
    },
  });
  await relay.runOnce();
  const [event] = published.filter((candidate) => (candidate.payload as OrderPlaced).orderId === orderId);
  expect(event?.topic).toBe(ORDER_PLACED);
  // Published again (a relay that died before marking it): still one confirmation.
  if (event) await sendConfirmation(database.db, event);
  expect(await client.checkout.orders.query()).toMatchObject([{ orderId, confirmationsSent: 1 }]);
});

it("places an order once per key and replays it to the retry", async () => {
  const key = globalThis.crypto.randomUUID();
  const client = clientWithKey(key);
  const items = [{ sku: "tea", qty: 2 }];
  const first = await client.checkout.placeOrder.mutate({ items });
  const retry = await client.checkout.placeOrder.mutate({ items });
  expect(first).toEqual({ orderId: expect.any(Number), totalCents: 1_300, createdAt: expect.any(Date), items });
  expect(retry).toEqual(first);
  expect(await client.checkout.orders.query()).toEqual([
    {
      ...first,
      items: [{ sku: "tea", qty: 2, priceCents: 650 }],
      // Nothing sends confirmations in this test until it runs a relay (below).
      confirmedAt: undefined,
      confirmationsSent: 0,
      note: "",
      version: 1,
    },
  ]);
  const lines = await database.db.select().from(orderLines).where(eq(orderLines.orderId, first.orderId));
  const charged = await database.db.select().from(payments).where(eq(payments.orderId, first.orderId));
  expect(lines).toHaveLength(1);
  expect(charged).toEqual([
    expect.objectContaining({ amountCents: 1_300, reference: expect.stringMatching(/^[0-9a-f]{40}$/) }),
  ]);
});

it("places one order for a storm of duplicates: 12 at once and 3 late, one key, through the app's handler", async () => {
  const { db } = database;
  const handler = createHandler(createRouter({ db }));
  // The example of docs/testing.md, word for word.
  // #region fire-duplicates
  const storm = await fireDuplicates({
    target: handler, // the app's Fetch handler, (req: Request) => Promise<Response>, as its route serves it
    path: "/api/trpc/checkout.placeOrder", // a tRPC procedure; any endpoint's path will do
    body: superjson.serialize({ items: [{ sku: "kettle", qty: 1 }] }), // as the app's transformer sends an input
    headers: { cookie: "uid=storm" }, // who is asking
    concurrent: 12, // at once, then 3 one after another
    late: 3,
    count: async () => (await db.select().from(orders).where(eq(orders.userId, "storm"))).length,
  });
  expect(storm.ran, String(storm)).toBe(1); // on failure: every answer, with its status and whether it was replayed
  // #endregion fire-duplicates
  // Every duplicate waits for the first (atomic mode) and gets its answer: none is refused, none runs again.
  expect(storm.statuses, String(storm)).toEqual({ 200: 15 });
  expect(storm.replays, String(storm)).toBe(14);
  expect(new Set(storm.answers.map((answer) => answer.body)).size).toBe(1);
});

it("refuses a request without a valid uid cookie, before anything runs", async () => {
  for (const cookie of ["", "uid=", "uid=has space", `uid=${"x".repeat(65)}`]) {
    const error = await clientWithKey(globalThis.crypto.randomUUID(), cookie)
      .checkout.orders.query()
      .catch((caught) => caught);
    expect(error.data).toMatchObject({ httpStatus: 401, code: "UNAUTHORIZED" });
  }
});

it("answers 413 to a body over the limit, declared or streamed, before tRPC reads it", async () => {
  const cart = JSON.stringify({ json: { items: [{ sku: "tea", qty: 1 }] }, padding: "x".repeat(MAX_BODY_BYTES) });
  const declared = await fetch(`${server.url}/api/trpc/checkout.placeOrder`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      cookie: "uid=ada",
      "idempotency-key": globalThis.crypto.randomUUID(),
    },
    body: cart,
  });
  expect(declared.status).toBe(413);
  expect(await declared.json()).toMatchObject({ error: { code: "PAYLOAD_TOO_LARGE" } });
  const streamed = await fetch(`${server.url}/api/trpc/checkout.placeOrder`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      cookie: "uid=ada",
      "idempotency-key": globalThis.crypto.randomUUID(),
    },
    body: new Blob([cart]).stream(),
    duplex: "half",
  } as RequestInit);
  expect(streamed.status).toBe(413);
});

it("has no fault switches unless IDEMKIT_FAULTS=1", async () => {
  armFaults("ada", { failBeforeCommit: 1 });
  const order = await clientWithKey(globalThis.crypto.randomUUID()).checkout.placeOrder.mutate({
    items: [{ sku: "mug", qty: 1 }],
  });
  expect(order.totalCents).toBe(1_800);
});

it("answers an unknown product with 404, stored: the retry gets the same answer", async () => {
  const client = clientWithKey(globalThis.crypto.randomUUID());
  for (let attempt = 0; attempt < 2; attempt++) {
    const error = await client.checkout.placeOrder.mutate({ items: [{ sku: "teapot", qty: 1 }] }).catch((e) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(error.data).toMatchObject({ httpStatus: 404, code: "NOT_FOUND" });
  }
});
