// @vitest-environment jsdom
/**
 * `useIdempotentMutation` in jsdom, against the demo's checkout API (tRPC + idemkit middleware + real PostgreSQL)
 * over HTTP on 127.0.0.1, through a proxy that loses responses and answers 503 or 409 on cue. Orders are counted
 * in the database: what a user relies on is how many orders exist, not what the hook says.
 */
import { fingerprint } from "@idemkit/core";
import { ActionInFlightError, type UseIdempotentMutationOptions, useIdempotentMutation } from "@idemkit/react";
import { createDatabase, type FaultProxy, serveFetch, startFaultProxy } from "@idemkit/testkit";
import { idempotencyLink } from "@idemkit/trpc/client";
import { onlineManager, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, renderHook, waitFor } from "@testing-library/react";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import { eq } from "drizzle-orm";
import { createElement, type ReactNode } from "react";
import superjson from "superjson";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, expectTypeOf, inject, it, vi } from "vitest";
import { type OpenDatabase, openDatabase } from "../src/server/database";
import { type AppRouter, createHandler, createRouter } from "../src/server/router";
import { orders } from "../src/server/schema";

const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();

let database: OpenDatabase;
let dropDatabase: () => Promise<void>;
let proxy: FaultProxy;
let closeServer: () => Promise<void>;

beforeAll(async () => {
  const created = await createDatabase(inject("postgresUrl"));
  dropDatabase = created.drop;
  database = await openDatabase({ url: created.url });
  const server = await serveFetch(createHandler(createRouter({ db: database.db })));
  closeServer = server.close;
  proxy = await startFaultProxy(server.url);
});
afterAll(async () => {
  await proxy?.close();
  await closeServer?.();
  await database?.close();
  await dropDatabase?.();
});

let user: string;
beforeEach(() => {
  user = `user-${globalThis.crypto.randomUUID().slice(0, 8)}`;
  sessionStorage.clear();
  proxy.requests.length = 0;
});
afterEach(() => {
  cleanup();
  onlineManager.setOnline(true);
  setNavigatorOnline(true);
});

const tea = { items: [{ sku: "tea", qty: 1 }] };
const mugs = { items: [{ sku: "mug", qty: 2 }] };

/** A fresh QueryClient and tRPC client per render, like a new page load; sessionStorage is what survives. */
function render(options: Pick<UseIdempotentMutationOptions<never>, "storage"> = {}) {
  const queryClient = new QueryClient();
  const url = `${proxy.url}/api/trpc`;
  const headers = { cookie: `uid=${user}` };
  const trpcClient = createTRPCClient<AppRouter>({
    links: [
      idempotencyLink<AppRouter>({ url, transformer: superjson, headers, retry: { baseDelayMs: 20, maxDelayMs: 50 } }),
      httpBatchLink({ url, transformer: superjson, headers }),
    ],
  });
  const wrapper = ({ children }: { children: ReactNode }) =>
    createElement(
      QueryClientProvider,
      { client: queryClient },
      createElement(TRPCProvider, { trpcClient, queryClient, children }),
    );
  return renderHook(() => useIdempotentMutation(useTRPC().checkout.placeOrder, options), { wrapper });
}

async function ordersOfUser(): Promise<number> {
  return (await database.db.select().from(orders).where(eq(orders.userId, user))).length;
}

function posts() {
  return proxy.requests.filter((request) => request.method === "POST");
}

/** The real setTimeout, kept for waiting on network I/O while the test's clock is fake. */
const realSetTimeout = globalThis.setTimeout;

/**
 * Waits until `condition` holds, while timers are fake: runs what is due now (TanStack Query notifies through
 * zero-delay timers) without moving the clock, and yields to real I/O in between. Gives up after 10 s.
 */
async function settledOn(condition: () => boolean): Promise<void> {
  for (let turn = 0; turn < 2_000; turn++) {
    await act(() => vi.advanceTimersByTimeAsync(0));
    if (condition()) return;
    await new Promise((resolve) => realSetTimeout(resolve, 5));
  }
  throw new Error("The condition never held.");
}

function setNavigatorOnline(online: boolean) {
  Object.defineProperty(window.navigator, "onLine", { configurable: true, get: () => online });
}

describe("one user action, one key", () => {
  it("sends one request for a double click, and keeps the key in sessionStorage", async () => {
    const { result } = render();
    act(() => {
      result.current.mutate(tea);
      result.current.mutate(tea);
    });
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(posts()).toHaveLength(1);
    expect(await ordersOfUser()).toBe(1);
    expect(result.current).toMatchObject({ attempt: 1, replayed: false, retryable: undefined });
    expect(result.current.data?.createdAt).toBeInstanceOf(Date);
    const key = result.current.key;
    expect(posts()[0]?.idempotencyKey).toBe(key);
    expect(JSON.parse(sessionStorage.getItem("idemkit:checkout.placeOrder") ?? "{}")).toEqual({
      key,
      fingerprint: fingerprint(tea),
    });
  });

  it("joins the action in flight when mutateAsync is called again before a re-render, and refuses another input", async () => {
    const { result } = render();
    let first: Promise<unknown> | undefined;
    let again: Promise<unknown> | undefined;
    let other: Promise<unknown> | undefined;
    await act(async () => {
      first = result.current.mutateAsync(tea);
      again = result.current.mutateAsync({ items: [{ sku: "tea", qty: 1 }] });
      other = result.current.mutateAsync(mugs).catch((error: unknown) => error);
      await first;
    });
    expect(again).toBe(first);
    expect(await other).toBeInstanceOf(ActionInFlightError);
    expect(posts()).toHaveLength(1);
    expect(await ordersOfUser()).toBe(1);
  });

  it("after a reload (unmount, remount, same sessionStorage) has the same key, and pressing again replays", async () => {
    const first = render();
    act(() => first.result.current.mutate(tea));
    await waitFor(() => expect(first.result.current.isSuccess).toBe(true));
    const key = first.result.current.key;
    first.unmount();

    const reloaded = render();
    await waitFor(() => expect(reloaded.result.current.key).toBe(key));
    act(() => reloaded.result.current.mutate(tea));
    await waitFor(() => expect(reloaded.result.current.isSuccess).toBe(true));
    expect(reloaded.result.current.replayed).toBe(true);
    expect(reloaded.result.current.data).toEqual(first.result.current.data);
    expect(posts().map((request) => request.idempotencyKey)).toEqual([key, key]);
    expect(await ordersOfUser()).toBe(1);
  });

  it("resumes with the same key when the page was reloaded while the request was in flight", async () => {
    proxy.inject({ kind: "delay", ms: 300 });
    const first = render();
    act(() => first.result.current.mutate(tea));
    await waitFor(() => expect(posts()).toHaveLength(1));
    const key = first.result.current.key;
    first.unmount(); // the page goes away; the request still reaches the server and commits

    const reloaded = render();
    act(() => reloaded.result.current.mutate(tea));
    await waitFor(() => expect(reloaded.result.current.isSuccess).toBe(true));
    expect(posts().map((request) => request.idempotencyKey)).toEqual([key, key]);
    expect(await ordersOfUser()).toBe(1);
  });

  it("starts a new action with a new key when the input changes, or after reset()", async () => {
    const { result } = render();
    act(() => result.current.mutate(tea));
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    const teaKey = result.current.key;

    act(() => result.current.mutate(mugs));
    await waitFor(() => expect(result.current.key).not.toBe(teaKey));
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    const mugKey = result.current.key;

    act(() => result.current.reset());
    expect(result.current.key).toBeUndefined();
    expect(result.current.isIdle).toBe(true);
    act(() => result.current.mutate(mugs));
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(result.current.key).not.toBe(mugKey);
    expect(result.current.replayed).toBe(false);

    expect(new Set(posts().map((request) => request.idempotencyKey)).size).toBe(3);
    expect(await ordersOfUser()).toBe(3);
  });

  it("keeps the key in the component only with storage: 'memory'", async () => {
    const { result } = render({ storage: "memory" });
    act(() => result.current.mutate(tea));
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(sessionStorage.length).toBe(0);
    act(() => result.current.mutate(tea));
    await waitFor(() => expect(result.current.replayed).toBe(true));
    expect(await ordersOfUser()).toBe(1);
  });
});

describe("faults between the browser and the server", () => {
  it("loses the response after the server committed: retries with the same key and shows the stored order as replayed", async () => {
    proxy.inject({ kind: "drop-response" });
    const { result } = render();
    act(() => result.current.mutate(tea));
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(result.current).toMatchObject({ attempt: 2, replayed: true, nextRetryAt: undefined });
    expect(new Set(posts().map((request) => request.idempotencyKey)).size).toBe(1);
    expect(await ordersOfUser()).toBe(1);
  });

  it("a 503 once: retried, placed once, not a replay", async () => {
    proxy.inject({ kind: "answer", status: 503 });
    const { result } = render();
    act(() => result.current.mutate(mugs));
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(result.current).toMatchObject({ attempt: 2, replayed: false });
    expect(await ordersOfUser()).toBe(1);
  });

  it("a 409 with Retry-After: shows when the next retry is due, then places the order once", async () => {
    proxy.inject({ kind: "answer", status: 409, headers: { "retry-after": "1" } });
    const { result } = render();
    // The clock and the link's wait are fake: the retry is due exactly 1 s after the click, and comes when the
    // test moves the clock, not after a real second.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const clickedAt = Date.now();
      act(() => result.current.mutate(tea));
      await settledOn(() => result.current.nextRetryAt !== undefined);
      expect(result.current.nextRetryAt).toBe(clickedAt + 1_000);
      expect(result.current.isPending).toBe(true);
      await act(() => vi.advanceTimersByTimeAsync(1_000));
      await settledOn(() => result.current.isSuccess);
    } finally {
      vi.useRealTimers();
    }
    expect(result.current).toMatchObject({ attempt: 2, nextRetryAt: undefined });
    expect(await ordersOfUser()).toBe(1);
  });
});

describe("terminal errors", () => {
  it("a 400 (input fails validation) is terminal and not retried", async () => {
    const { result } = render();
    act(() => result.current.mutate({ items: [{ sku: "tea", qty: 0 }] }));
    await waitFor(() => expect(result.current.isError).toBe(true));
    expect(result.current.error?.data?.httpStatus).toBe(400);
    expect(result.current).toMatchObject({ retryable: false, attempt: 1 });
    expect(posts()).toHaveLength(1);
  });

  it("a 422 (this key was used for another cart) is terminal, not retried, and creates nothing", async () => {
    const key = globalThis.crypto.randomUUID();
    // Another tab placed a different cart under this key; this tab's stored action claims it for its own cart.
    await fetch(`${proxy.url}/api/trpc/checkout.placeOrder`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key, cookie: `uid=${user}` },
      body: JSON.stringify(superjson.serialize(mugs)),
    });
    sessionStorage.setItem("idemkit:checkout.placeOrder", JSON.stringify({ key, fingerprint: fingerprint(tea) }));
    const { result } = render();
    act(() => result.current.mutate(tea));
    await waitFor(() => expect(result.current.isError).toBe(true));
    expect(result.current.error?.data?.httpStatus).toBe(422);
    expect(result.current).toMatchObject({ retryable: false, attempt: 1, key });
    expect(posts()).toHaveLength(2);
    expect(await ordersOfUser()).toBe(1);
  });

  it("a retryable error after the link gave up says so, and pressing again keeps the key", async () => {
    proxy.inject(...Array.from({ length: 5 }, () => ({ kind: "answer", status: 503 }) as const));
    const { result } = render();
    act(() => result.current.mutate(tea));
    await waitFor(() => expect(result.current.isError).toBe(true));
    expect(result.current).toMatchObject({ retryable: true, attempt: 5 });
    const key = result.current.key;
    act(() => result.current.mutate(tea));
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(result.current.key).toBe(key);
    expect(await ordersOfUser()).toBe(1);
  });
});

describe("offline", () => {
  it("pauses while offline before the click, then sends once when back online", async () => {
    onlineManager.setOnline(false);
    const { result } = render();
    act(() => result.current.mutate(tea));
    // Paused by TanStack Query before it was sent: its own isPaused, and so offline.
    await waitFor(() => expect(result.current).toMatchObject({ isPaused: true, isOffline: true }));
    expect(posts()).toHaveLength(0);
    act(() => onlineManager.setOnline(true));
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(posts()).toHaveLength(1);
    expect(await ordersOfUser()).toBe(1);
  });

  it("waits for the connection when it drops mid-request, then retries with the same key", async () => {
    proxy.inject({ kind: "reset" });
    setNavigatorOnline(false);
    const { result } = render();
    act(() => result.current.mutate(tea));
    // Waiting in the link before a retry: offline, while TanStack Query's own mutation runs (not paused).
    await waitFor(() => expect(result.current).toMatchObject({ isOffline: true, isPaused: false }));
    expect(posts()).toHaveLength(1);
    act(() => {
      setNavigatorOnline(true);
      window.dispatchEvent(new Event("online"));
    });
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(result.current.isOffline).toBe(false);
    expect(new Set(posts().map((request) => request.idempotencyKey)).size).toBe(1);
    expect(posts()).toHaveLength(2);
    expect(await ordersOfUser()).toBe(1);
  });
});

describe("types", () => {
  it("infers the procedure's input and output through the hook", () => {
    const { result } = render();
    type Input = Parameters<typeof result.current.mutate>[0];
    expectTypeOf<Input>().toEqualTypeOf<{ items: { sku: string; qty: number }[] }>();
    expectTypeOf(result.current.data).toEqualTypeOf<
      { orderId: number; totalCents: number; createdAt: Date; items: { sku: string; qty: number }[] } | undefined
    >();
    expectTypeOf(result.current.mutateAsync).returns.resolves.toHaveProperty("orderId").toEqualTypeOf<number>();
    expectTypeOf(result.current.key).toEqualTypeOf<string | undefined>();
    expectTypeOf(result.current.nextRetryAt).toEqualTypeOf<number | undefined>();
    expectTypeOf(result.current.error?.data?.httpStatus).toEqualTypeOf<number | undefined>();
    const state = result.current;
    if (state.isSuccess) expectTypeOf(state.data.orderId).toEqualTypeOf<number>();
    if (state.isError) expectTypeOf(state.error.message).toEqualTypeOf<string>();
    const wrongInput = () => {
      // @ts-expect-error qty is a number
      result.current.mutate({ items: [{ sku: "tea", qty: "1" }] });
    };
    expectTypeOf(wrongInput).toBeFunction();
  });
});
