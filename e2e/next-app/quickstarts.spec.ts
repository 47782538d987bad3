/**
 * The README's route handler and tRPC quickstarts, as a new app has them (next-app/prepare.ts), over real HTTP
 * against a real PostgreSQL: the same key sent twice places one order, and the second answer is the first, replayed.
 */
import { type APIRequestContext, expect, test } from "@playwright/test";
import { closeDatabase, ordersOf } from "./checkout.js";

test.afterAll(closeDatabase);

/** Sends `data` to `path` twice with one key, as a new user: the two answers, and how many orders that user has. */
async function sentTwice(request: APIRequestContext, path: string, data: object) {
  const userId = globalThis.crypto.randomUUID();
  const headers = { "idempotency-key": globalThis.crypto.randomUUID(), "x-user": userId };
  const first = await request.post(path, { headers, data });
  const again = await request.post(path, { headers, data });
  return { first, again, orders: await ordersOf(userId) };
}

test("the route handler: one order per key, the retry answered with the same order, replayed", async ({ request }) => {
  const { first, again, orders } = await sentTwice(request, "/api/orders", { sku: "mug", qty: 2 });
  expect(first.status()).toBe(201);
  expect(again.status()).toBe(201);
  expect(again.headers()["idempotent-replayed"]).toBe("true");
  expect(await again.json()).toEqual(await first.json());
  expect(orders).toBe(1);
});

test("the tRPC mutation: one order per key, the retry answered with the same order, replayed", async ({ request }) => {
  const { first, again, orders } = await sentTwice(request, "/api/trpc/placeOrder", { sku: "mug", qty: 1 });
  expect(first.status()).toBe(200);
  expect(again.status()).toBe(200);
  expect(again.headers()["idempotent-replayed"]).toBe("true");
  const answer = await first.json();
  expect(answer).toMatchObject({ result: { data: { orderId: expect.any(Number) } } });
  expect(await again.json()).toEqual(answer);
  expect(orders).toBe(1);
});
