/**
 * The example as a user runs it: embedded PGlite with its migrations, tRPC over real HTTP. A repeated order is
 * replayed, not placed twice, and a mistake in the cart is answered the same way every time.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ServedHandler, serveFetch } from "@idemkit/testkit";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import superjson from "superjson";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type OpenDatabase, openDatabase } from "../src/database.js";
import { type AppRouter, createHandler, createRouter } from "../src/router.js";

let dataDir: string;
let database: OpenDatabase;
let server: ServedHandler;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "idemkit-example-"));
  database = await openDatabase({ dataDir });
  server = await serveFetch(createHandler(createRouter({ db: database.db })));
});
afterAll(async () => {
  await server?.close();
  await database?.close();
  await rm(dataDir, { recursive: true, force: true });
});

function clientWithKey(key: string) {
  return createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${server.url}/api/trpc`,
        transformer: superjson,
        headers: () => ({ "idempotency-key": key, "x-user": "ada" }),
      }),
    ],
  });
}

it("places an order once per key and replays it to the retry", async () => {
  const key = globalThis.crypto.randomUUID();
  const client = clientWithKey(key);
  const items = [{ sku: "tea", qty: 2 }];
  const first = await client.checkout.placeOrder.mutate({ items });
  const retry = await client.checkout.placeOrder.mutate({ items });
  expect(first).toEqual({ orderId: expect.any(Number), totalCents: 1_300, createdAt: expect.any(Date) });
  expect(retry).toEqual(first);
  expect(await client.checkout.orders.query()).toHaveLength(1);
});

it("answers an unknown product with 404, stored: the retry gets the same answer", async () => {
  const client = clientWithKey(globalThis.crypto.randomUUID());
  for (let attempt = 0; attempt < 2; attempt++) {
    const error = await client.checkout.placeOrder.mutate({ items: [{ sku: "teapot", qty: 1 }] }).catch((e) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(error.data).toMatchObject({ httpStatus: 404, code: "NOT_FOUND" });
  }
});
