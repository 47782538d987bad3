// @vitest-environment jsdom
/**
 * The link while the browser is offline, on a clock the test owns (the link's `clock` option, no fake timers) and
 * `fetch` answered by the test: a failure while offline is an attempt, the wait for the connection ends with the
 * budget, and the same key goes out again once the browser is back.
 */
import { type IdempotencyProgress, idempotencyContext, idempotencyLink, type LinkClock } from "@idemkit/trpc/client";
import { createTRPCClient } from "@trpc/client";
import { initTRPC } from "@trpc/server";
import { afterEach, beforeEach, expect, it } from "vitest";
import { testClock } from "./clock.js";

const t = initTRPC.create();
const router = t.router({ placeOrder: t.procedure.mutation(() => ({ orderId: 1 })) });
type Router = typeof router;

let online = true;
let keys: Array<string | null>;
beforeEach(() => {
  online = true;
  keys = [];
  Object.defineProperty(window.navigator, "onLine", { configurable: true, get: () => online });
});
afterEach(() => {
  online = true;
});

/** A fetch that fails like a dropped connection while offline, and answers the order when online. */
const fetchWhileOnline = async (_url: unknown, init?: { headers?: unknown }) => {
  keys.push(new Headers(init?.headers as HeadersInit | undefined).get("idempotency-key"));
  if (!online) throw new TypeError("Failed to fetch");
  return new Response(JSON.stringify({ result: { data: { orderId: 1 } } }), {
    headers: { "content-type": "application/json" },
  });
};

function client(clock: LinkClock, maxAttempts = 5, maxElapsedMs = 60_000) {
  return createTRPCClient<Router>({
    links: [
      idempotencyLink<Router>({
        url: "http://shop.test/trpc",
        fetch: fetchWhileOnline,
        clock,
        retry: { maxAttempts, maxElapsedMs },
      }),
    ],
  });
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

it("sends again with the same key once the browser is back within the budget", async () => {
  const { clock, advance } = testClock();
  const progress: IdempotencyProgress[] = [];
  online = false;
  const placing = client(clock).placeOrder.mutate(undefined, {
    context: idempotencyContext({ onProgress: (event) => progress.push(event) }),
  });
  await flush();
  expect(progress.map((event) => event.type)).toEqual(["request", "offline"]);
  advance(30_000);
  online = true;
  window.dispatchEvent(new Event("online"));
  expect(await placing).toEqual({ orderId: 1 });
  expect(keys).toHaveLength(2);
  expect(keys[1]).toBe(keys[0]);
});

it("stops waiting for the connection when the budget (maxElapsedMs) runs out, and fails as retryable", async () => {
  const { clock, advance } = testClock();
  const progress: IdempotencyProgress[] = [];
  online = false;
  const placing = client(clock)
    .placeOrder.mutate(undefined, { context: idempotencyContext({ onProgress: (event) => progress.push(event) }) })
    .catch((error: unknown) => error);
  await flush();
  advance(59_999);
  await flush();
  expect(progress.at(-1)?.type).toBe("offline");
  advance(1);
  expect(await placing).toBeInstanceOf(Error);
  expect(progress.at(-1)).toMatchObject({ type: "failure", retryable: true, attempt: 1 });
  // Back online later, nothing more is sent: the hook keeps the key for the next press.
  online = true;
  window.dispatchEvent(new Event("online"));
  await flush();
  expect(keys).toHaveLength(1);
});

it("counts a failure while offline as an attempt: with none left, it fails instead of waiting", async () => {
  const { clock } = testClock();
  const progress: IdempotencyProgress[] = [];
  online = false;
  const failed = await client(clock, 1)
    .placeOrder.mutate(undefined, { context: idempotencyContext({ onProgress: (event) => progress.push(event) }) })
    .catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(Error);
  expect(progress.map((event) => event.type)).toEqual(["request", "failure"]);
  expect(keys).toHaveLength(1);
});

it("with no budget (maxElapsedMs: Infinity), waits for the connection however long it takes", async () => {
  const { clock, advance, sleeping } = testClock();
  online = false;
  const placing = client(clock, 5, Number.POSITIVE_INFINITY).placeOrder.mutate();
  await flush();
  expect(sleeping).toHaveLength(0);
  advance(10 * 24 * 3_600_000);
  online = true;
  window.dispatchEvent(new Event("online"));
  expect(await placing).toEqual({ orderId: 1 });
  expect(keys).toHaveLength(2);
});
