/**
 * fireDuplicates without tRPC: a route handler protected by withIdempotency, and the same handler unprotected,
 * called as their Fetch handlers. The report says how many times the effect happened, in words a failing assertion
 * can print.
 */
import { expect, it } from "vitest";
import { withIdempotency } from "../fetch.js";
import { memoryStore } from "../memory-store.js";
import { fireDuplicates } from "./duplicates.js";

function orders() {
  let placed = 0;
  const place = async (request: Request) => {
    const { item } = (await request.json()) as { item: string };
    placed++;
    return Response.json({ orderId: placed, item }, { status: 201 });
  };
  const protectedPlace = withIdempotency(place, { store: memoryStore(), scope: () => "alice" });
  return { place, protectedPlace, placed: async () => placed };
}

it("reports one run and the replays for a protected route handler", async () => {
  const shop = orders();
  const storm = await fireDuplicates({
    target: shop.protectedPlace,
    path: "/api/orders",
    body: { item: "tea" },
    count: shop.placed,
  });
  expect(storm.ran, String(storm)).toBe(1);
  expect(storm.answers).toHaveLength(12);
  // Lease mode (a memory store): a duplicate that meets the first still running is told to come back.
  expect(storm.replays + (storm.statuses[409] ?? 0), String(storm)).toBe(11);
  expect(storm.answers.filter((answer) => answer.status === 201)).toHaveLength(storm.replays + 1);
});

it("reports every run of an unprotected one, so the assertion that fails can say so", async () => {
  const shop = orders();
  const storm = await fireDuplicates({ target: shop.place, path: "/api/orders", body: { item: "tea" }, late: 1 });
  expect(storm).toMatchObject({ replays: 0, statuses: { 201: 11 } });
  expect(String(storm)).toMatch(/11 requests with key \S+: 11 × 201; 0 replayed$/m);
});
