/**
 * The README's route handler and tRPC quickstarts, as a new app has them (next-app/prepare.ts), over real HTTP
 * against a real PostgreSQL: the same key sent twice places one order, and the second answer is the first, replayed.
 */
import { expect, test } from "@playwright/test";
import { closeDatabase, ordersOf } from "./checkout.js";

test.afterAll(closeDatabase);

test("the route handler: one order per key, the retry answered with the same order, replayed", async ({ request }) => {
  const userId = globalThis.crypto.randomUUID();
  const key = globalThis.crypto.randomUUID();
  const send = () =>
    request.post("/api/orders", {
      headers: { "idempotency-key": key, "x-user": userId },
      data: { sku: "mug", qty: 2 },
    });
  const first = await send();
  const again = await send();
  expect(first.status()).toBe(201);
  expect(again.status()).toBe(201);
  expect(again.headers()["idempotent-replayed"]).toBe("true");
  expect(await again.json()).toEqual(await first.json());
  expect(await ordersOf(userId)).toBe(1);
});

test("the tRPC mutation: one order per key, the retry answered with the same order, replayed", async ({ request }) => {
  const userId = globalThis.crypto.randomUUID();
  const key = globalThis.crypto.randomUUID();
  const send = () =>
    request.post("/api/trpc/placeOrder", {
      headers: { "idempotency-key": key, "x-user": userId },
      data: { sku: "mug", qty: 1 },
    });
  const first = await send();
  const again = await send();
  expect(first.status()).toBe(200);
  expect(again.status()).toBe(200);
  expect(again.headers()["idempotent-replayed"]).toBe("true");
  const answer = await first.json();
  expect(answer).toMatchObject({ result: { data: { orderId: expect.any(Number) } } });
  expect(await again.json()).toEqual(answer);
  expect(await ordersOf(userId)).toBe(1);
});
