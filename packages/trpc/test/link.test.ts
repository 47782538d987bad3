/**
 * The client contract (DESIGN.md §3) for `idempotencyLink` and for `idempotencyRetryLink` over each of tRPC's own
 * terminating links, against the real middleware and a real PostgreSQL store over HTTP on 127.0.0.1, with a
 * fault-injecting proxy between client and server.
 */
import type { IdempotencyStore } from "@idemkit/core";
import { drizzleStore } from "@idemkit/drizzle";
import { type FaultProxy, openPostgres, type ServedHandler, serveFetch, startFaultProxy } from "@idemkit/testkit";
import {
  createTRPCClient,
  type HTTPHeaders,
  httpBatchLink,
  httpBatchStreamLink,
  httpLink,
  splitLink,
  TRPCClientError,
  type TRPCLink,
} from "@trpc/client";
import { initTRPC } from "@trpc/server";
import { observable } from "@trpc/server/observable";
import superjson from "superjson";
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, inject, it, vi } from "vitest";
import { z } from "zod";
import {
  type IdempotencyLinkOptions,
  type IdempotencyProgress,
  idempotencyContext,
  idempotencyHeaders,
  idempotencyLink,
  idempotencyRetryLink,
  isRetryableError,
  KeyedBatchError,
  type LinkClock,
  mayHaveRun,
} from "../src/client/index.js";
import { idempotency } from "../src/index.js";
import { type AppOptions, type AppRouter, BUSINESS_TABLES, createApp } from "./app.js";
import { mutate } from "./client.js";
import { testClock } from "./clock.js";
import { serveRouter } from "./serve-router.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
const closers: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 10 });
  await database.query(BUSINESS_TABLES);
});
afterAll(() => database.close());
afterEach(async () => {
  await Promise.all(closers.splice(0).map((closer) => closer.close()));
});

const fast = { baseDelayMs: 20, maxDelayMs: 100 };

type Retry = IdempotencyLinkOptions<AppRouter>["retry"];
type Policy = Pick<IdempotencyLinkOptions<AppRouter>, "retry" | "clock">;

/** How a client is put together: the links, given the server's URL, the app's own headers and the retry policy. */
interface Transport {
  name: string;
  links(url: string, headers: HTTPHeaders, policy: Policy): TRPCLink<AppRouter>[];
  /** Whether queries sent together leave in one request. */
  batchesQueries: boolean;
  /** Whether mutations sent together would leave in one request, where one key cannot serve them. */
  batchesMutations: boolean;
  /** Whether the status and headers of an answer whose body is not tRPC's JSON (a proxy's page) reach the link. */
  readsEveryStatus: boolean;
  /**
   * Whether the headers the middleware sets for one call (Idempotent-Replayed, Retry-After) reach the link. A
   * streamed batch sends its headers before any of its calls has run, so there they cannot.
   */
  carriesCallHeaders: boolean;
}

const transformer = superjson;
const keyed = (headers: HTTPHeaders) => (opts: Parameters<typeof idempotencyHeaders>[0]) => ({
  ...headers,
  ...idempotencyHeaders(opts),
});

const TRANSPORTS: Transport[] = [
  {
    name: "idempotencyLink before httpBatchLink",
    links: (url, headers, policy) => [
      idempotencyLink<AppRouter>({ url, transformer, headers, ...policy }),
      httpBatchLink({ url, transformer, headers }),
    ],
    batchesQueries: true,
    batchesMutations: false,
    readsEveryStatus: true,
    carriesCallHeaders: true,
  },
  {
    name: "idempotencyRetryLink in splitLink's mutation branch, over httpLink; httpBatchLink for the rest",
    links: (url, headers, policy) => [
      splitLink({
        condition: (op) => op.type === "mutation",
        true: [idempotencyRetryLink(policy), httpLink({ url, transformer, headers: keyed(headers) })],
        false: httpBatchLink({ url, transformer, headers }),
      }),
    ],
    batchesQueries: true,
    batchesMutations: false,
    readsEveryStatus: false,
    carriesCallHeaders: true,
  },
  {
    name: "idempotencyRetryLink over httpLink",
    links: (url, headers, policy) => [
      idempotencyRetryLink(policy),
      httpLink({ url, transformer, headers: keyed(headers) }),
    ],
    batchesQueries: false,
    batchesMutations: false,
    readsEveryStatus: false,
    carriesCallHeaders: true,
  },
  {
    name: "idempotencyRetryLink over httpBatchStreamLink",
    links: (url, headers, policy) => [
      idempotencyRetryLink(policy),
      httpBatchStreamLink({ url, transformer, headers: keyed(headers) }),
    ],
    batchesQueries: true,
    batchesMutations: true,
    readsEveryStatus: false,
    carriesCallHeaders: false,
  },
];

/** The fixture app behind a fault proxy, and a tRPC client that reaches it through `transport`'s links. */
async function startOver(
  transport: Transport,
  options: Partial<AppOptions> = {},
  retry: Retry = fast,
  clock?: LinkClock,
) {
  const app = createApp({ db: database.db, ...options });
  const server: ServedHandler = await serveFetch(app.handler);
  const proxy: FaultProxy = await startFaultProxy(server.url);
  closers.push(proxy, server);
  const user = `user-${globalThis.crypto.randomUUID()}`;
  const client = createTRPCClient<AppRouter>({
    links: transport.links(`${proxy.url}/trpc`, { "x-user": user }, { retry, clock }),
  });
  return { ...app, server, proxy, client, user };
}

async function ordersOf(user: string): Promise<number> {
  const [row] = await database.query<{ n: number }>("select count(*)::int as n from orders where user_id = $1", [user]);
  return row?.n ?? 0;
}

/** A context that records the link's progress reports, with the action's key when one is given. */
function recorder(key?: string) {
  const progress: IdempotencyProgress[] = [];
  const onProgress = (event: IdempotencyProgress) => progress.push(event);
  return { progress, context: idempotencyContext(key === undefined ? { onProgress } : { key, onProgress }) };
}

function keysOf(proxy: FaultProxy): Array<string | undefined> {
  return proxy.requests.filter((request) => request.method === "POST").map((request) => request.idempotencyKey);
}

describe.each(TRANSPORTS)("over $name", (transport) => {
  const start = (options?: Partial<AppOptions>, retry?: Retry, clock?: LinkClock) =>
    startOver(transport, options, retry, clock);

  describe("keys", () => {
    it("mints one UUID v4 per mutation and sends it as Idempotency-Key", async () => {
      const { client, proxy, user } = await start();
      const first = await client.placeOrder.mutate({ sku: "tea", qty: 1 });
      await client.placeOrder.mutate({ sku: "tea", qty: 1 });
      const keys = keysOf(proxy);
      expect(keys).toHaveLength(2);
      for (const key of keys)
        expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(keys[0]).not.toBe(keys[1]);
      expect(first.createdAt).toBeInstanceOf(Date);
      expect(await ordersOf(user)).toBe(2);
    });

    it("uses the key from the operation context, so the same action replays instead of running again", async () => {
      const { client, proxy, executions, user } = await start();
      const key = globalThis.crypto.randomUUID();
      const first = recorder();
      const second = recorder(key);
      const a = await client.placeOrder.mutate({ sku: "tea", qty: 2 }, { context: first.context });
      const b = await client.placeOrder.mutate({ sku: "tea", qty: 2 }, { context: second.context });
      const c = await client.placeOrder.mutate({ sku: "tea", qty: 2 }, { context: idempotencyContext({ key }) });
      expect(keysOf(proxy).slice(1)).toEqual([key, key]);
      expect(c).toEqual(b);
      expect(a.orderId).not.toBe(b.orderId);
      expect(executions.get("placeOrder")).toBe(2);
      expect(await ordersOf(user)).toBe(2);
      expect(first.progress.at(-1)).toMatchObject({ type: "success", attempt: 1, replayed: false });
      expect(second.progress).toEqual([
        { type: "request", key, attempt: 1 },
        { type: "success", key, attempt: 1, replayed: false },
      ]);
    });

    it("refuses an invalid key from the context before sending anything", async () => {
      const { client, proxy } = await start();
      const sending = client.placeOrder.mutate({ sku: "tea", qty: 1 }, { context: idempotencyContext({ key: "a b" }) });
      await expect(sending).rejects.toThrow(/Idempotency-Key.*placeOrder/);
      expect(proxy.requests).toHaveLength(0);
    });

    it.runIf(!transport.batchesMutations)(
      "never batches keyed mutations; queries go as the transport sends them",
      async () => {
        const { client, proxy } = await start();
        await Promise.all([
          client.placeOrder.mutate({ sku: "tea", qty: 1 }),
          client.placeOrder.mutate({ sku: "mug", qty: 1 }),
          client.ping.query(),
          client.ping.query(),
        ]);
        const posts = proxy.requests.filter((request) => request.method === "POST");
        expect(posts.map((request) => request.path).sort()).toEqual(["/trpc/placeOrder", "/trpc/placeOrder"]);
        expect(new Set(posts.map((request) => request.idempotencyKey)).size).toBe(2);
        const gets = proxy.requests.filter((request) => request.method === "GET");
        expect(gets.map((request) => request.path)).toEqual(
          transport.batchesQueries
            ? [expect.stringMatching(/^\/trpc\/ping,ping\?batch=1/)]
            : [expect.stringMatching(/^\/trpc\/ping\?/), expect.stringMatching(/^\/trpc\/ping\?/)],
        );
        expect(gets.map((request) => request.idempotencyKey)).toEqual(gets.map(() => undefined));
      },
    );

    it.runIf(transport.batchesMutations)(
      "sends a mutation alone in its batch with its key; two at once are held back, then each sent alone, once",
      async () => {
        const { client, proxy, executions, user } = await start();
        proxy.inject({ kind: "drop-response" });
        await client.placeOrder.mutate({ sku: "tea", qty: 1 });
        const [first, second] = keysOf(proxy);
        expect(second).toBe(first);
        expect(executions.get("placeOrder")).toBe(1);
        const tea = recorder();
        const mug = recorder();
        await Promise.all([
          client.placeOrder.mutate({ sku: "tea", qty: 2 }, { context: tea.context }),
          client.placeOrder.mutate({ sku: "mug", qty: 1 }, { context: mug.context }),
        ]);
        for (const { progress } of [tea, mug]) {
          const held = progress.find((event) => event.type === "retry");
          expect(held).toMatchObject({ attempt: 1, status: undefined, error: { cause: expect.any(KeyedBatchError) } });
        }
        // The batch of two never left; each went alone, with its own key.
        expect(keysOf(proxy)).toHaveLength(4);
        expect(new Set(keysOf(proxy).slice(2)).size).toBe(2);
        expect(executions.get("placeOrder")).toBe(3);
        expect(await ordersOf(user)).toBe(3);
      },
    );
  });

  describe("retries", () => {
    it("retries with the same key when the response is lost after the server committed, and gets the stored result", async () => {
      const { client, proxy, executions, user } = await start();
      proxy.inject({ kind: "drop-response" });
      const { progress, context } = recorder();
      const order = await client.placeOrder.mutate({ sku: "kettle", qty: 1 }, { context });
      const [first, second] = keysOf(proxy);
      expect(second).toBe(first);
      expect(executions.get("placeOrder")).toBe(1);
      expect(await ordersOf(user)).toBe(1);
      expect(order.createdAt).toBeInstanceOf(Date);
      expect(progress.map((event) => event.type)).toEqual(["request", "retry", "request", "success"]);
      expect(progress.at(-1)).toMatchObject({ attempt: 2, replayed: transport.carriesCallHeaders });
    });

    it("keeps going when onProgress throws: the observer never changes the outcome", async () => {
      const { client, proxy, executions, user } = await start();
      proxy.inject({ kind: "drop-response" });
      const error = vi.spyOn(console, "error").mockImplementation(() => {});
      try {
        const onProgress = () => {
          throw new Error("a broken progress bar");
        };
        const order = await client.placeOrder.mutate(
          { sku: "kettle", qty: 1 },
          { context: idempotencyContext({ onProgress }) },
        );
        expect(order.orderId).toBeGreaterThan(0);
        expect(keysOf(proxy)).toHaveLength(2);
        expect(executions.get("placeOrder")).toBe(1);
        expect(await ordersOf(user)).toBe(1);
        expect(error).toHaveBeenCalledTimes(1);
      } finally {
        error.mockRestore();
      }
    });

    it("retries a 503 that never reached the server (non-JSON body), then runs once", async () => {
      const { client, proxy, executions, user } = await start();
      proxy.inject({ kind: "answer", status: 503, body: "<html>upstream unavailable</html>" });
      const { progress, context } = recorder();
      await client.placeOrder.mutate({ sku: "mug", qty: 3 }, { context });
      expect(keysOf(proxy)).toHaveLength(2);
      expect(new Set(keysOf(proxy)).size).toBe(1);
      expect(executions.get("placeOrder")).toBe(1);
      expect(await ordersOf(user)).toBe(1);
      expect(progress.at(-1)).toMatchObject({ type: "success", attempt: 2, replayed: false });
      // Only the short form sees a proxy page's status; through tRPC's own links it is an answer that never came.
      expect(progress.find((event) => event.type === "retry")).toMatchObject({
        status: transport.readsEveryStatus ? 503 : undefined,
      });
    });

    it("retries a 200 whose body was cut off on the way with the same key, and gets the stored result", async () => {
      const { client, proxy, executions, user } = await start();
      proxy.inject({ kind: "cut-body" });
      const { progress, context } = recorder();
      const order = await client.placeOrder.mutate({ sku: "kettle", qty: 2 }, { context });
      expect(order.createdAt).toBeInstanceOf(Date);
      expect(keysOf(proxy)).toHaveLength(2);
      expect(new Set(keysOf(proxy)).size).toBe(1);
      expect(executions.get("placeOrder")).toBe(1);
      expect(await ordersOf(user)).toBe(1);
      expect(progress.find((event) => event.type === "retry")).toMatchObject({ attempt: 1, status: undefined });
    });

    it.each([
      ["the operation's signal", "operation"],
      ["the call's signal in idempotencyContext", "call"],
    ] as const)("stops an attempt still on its way when the caller aborts through %s", async (_, through) => {
      const { client, proxy } = await start();
      proxy.inject({ kind: "delay", ms: 60_000 });
      const controller = new AbortController();
      const { progress, context } = recorder();
      const withSignal = { ...context, idempotency: { ...context.idempotency, signal: controller.signal } };
      const sending = client.placeOrder
        .mutate(
          { sku: "tea", qty: 1 },
          through === "operation" ? { context, signal: controller.signal } : { context: withSignal },
        )
        .catch((error: unknown) => error);
      await expect.poll(() => proxy.requests.length, { interval: 5 }).toBe(1);
      controller.abort();
      expect(await sending).toBeInstanceOf(TRPCClientError);
      expect(progress.map((event) => event.type)).toEqual(["request"]);
      expect(keysOf(proxy)).toHaveLength(1);
    });

    it("retries a connection cut before the server saw the request, and 429 / 502 answers", async () => {
      const { client, proxy, executions } = await start();
      proxy.inject({ kind: "reset" }, { kind: "answer", status: 429 }, { kind: "answer", status: 502 });
      await client.placeOrder.mutate({ sku: "mug", qty: 1 });
      expect(keysOf(proxy)).toHaveLength(4);
      expect(new Set(keysOf(proxy)).size).toBe(1);
      expect(executions.get("placeOrder")).toBe(1);
    });

    it("retries a lease-mode 409 soon, not when the 60 s lease would end, and replays the first call's result", async () => {
      let release!: () => void;
      const held = new Promise<void>((done) => {
        release = done;
      });
      // The link's wait runs on a clock the test moves once the retry is scheduled: the test never sleeps.
      const { clock, advance } = testClock();
      const { client, proxy, executions, server, user } = await start({ mode: "lease", hold: () => held }, fast, clock);
      const key = globalThis.crypto.randomUUID();
      // The first request (another tab, say) goes straight to the server and holds its claim.
      const firstTab = mutate(server.url, "placeOrder", { sku: "tea", qty: 5 }, { key, user });
      await expect.poll(() => executions.get("placeOrder")).toBe(1);
      const progress: IdempotencyProgress[] = [];
      let retryScheduled!: () => void;
      const scheduled = new Promise<void>((resolve) => {
        retryScheduled = resolve;
      });
      const onProgress = (event: IdempotencyProgress) => {
        progress.push(event);
        if (event.type === "retry") retryScheduled();
      };
      const second = client.placeOrder.mutate(
        { sku: "tea", qty: 5 },
        { context: idempotencyContext({ key, onProgress }) },
      );
      await scheduled;
      release();
      await firstTab;
      advance(1_000);
      const secondResult = await second;
      const firstAnswer = await firstTab;
      const retry = progress.find((event) => event.type === "retry");
      expect(retry).toMatchObject({ attempt: 1, delayMs: 1_000 });
      expect(retry?.type === "retry" && retry.error.data?.httpStatus).toBe(409);
      // A streamed batch answers 200 before its calls finish: the call's own 409 is the status all the same.
      expect(retry).toMatchObject({ status: 409 });
      expect(progress.at(-1)).toMatchObject({ type: "success", attempt: 2, replayed: transport.carriesCallHeaders });
      expect(secondResult).toEqual(firstAnswer.data);
      expect(executions.get("placeOrder")).toBe(1);
      expect(await ordersOf(user)).toBe(1);
      expect(keysOf(proxy)).toEqual([key, key]);
    });

    it("gives up after maxAttempts with the last error, marked retryable", async () => {
      const { client, proxy, executions } = await start({}, { ...fast, maxAttempts: 3 });
      proxy.inject(...Array.from({ length: 5 }, () => ({ kind: "answer", status: 503 }) as const));
      const { progress, context } = recorder();
      const error = await client.placeOrder.mutate({ sku: "tea", qty: 1 }, { context }).catch((caught) => caught);
      expect(error).toBeInstanceOf(TRPCClientError);
      expect(isRetryableError(error)).toBe(true);
      expect(keysOf(proxy)).toHaveLength(3);
      expect(progress.at(-1)).toMatchObject({ type: "failure", attempt: 3, retryable: true });
      expect(executions.get("placeOrder")).toBeUndefined();
    });

    it.each([
      ["the operation's signal", "operation"],
      ["the call's signal in idempotencyContext (what the hook's reset() aborts)", "call"],
    ] as const)(
      "stops waiting at once when the caller aborts through %s, and sends nothing more",
      async (_, through) => {
        const { client, proxy } = await start({}, { baseDelayMs: 30_000, maxDelayMs: 30_000 });
        proxy.inject({ kind: "answer", status: 503, headers: { "retry-after": "30" } });
        const controller = new AbortController();
        const progress: IdempotencyProgress[] = [];
        const onProgress = (event: IdempotencyProgress) => progress.push(event);
        const context = idempotencyContext(
          through === "call" ? { onProgress, signal: controller.signal } : { onProgress },
        );
        vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
        try {
          const sending = client.placeOrder.mutate(
            { sku: "tea", qty: 1 },
            through === "operation" ? { context, signal: controller.signal } : { context },
          );
          // Settles on the abort alone: no timer is stepped before it.
          const settled = sending.catch((error: unknown) => error);
          await expect.poll(() => progress.some((event) => event.type === "retry"), { interval: 0 }).toBe(true);
          controller.abort();
          expect(await settled).toBeInstanceOf(TRPCClientError);
          // Retry-After (30 s) is on the proxy's own answer, whose headers only the short form reads.
          if (transport.readsEveryStatus) {
            expect(progress.find((event) => event.type === "retry")).toMatchObject({ delayMs: 30_000 });
          }
          // Past the 30 s the wait would have lasted, nothing more is sent.
          await vi.advanceTimersByTimeAsync(60_000);
          expect(keysOf(proxy)).toHaveLength(1);
        } finally {
          vi.useRealTimers();
        }
      },
    );
  });

  describe("terminal answers are not retried", () => {
    it("422 for a key reused with another input: one request, nothing runs", async () => {
      const { client, proxy, executions, user } = await start();
      const key = globalThis.crypto.randomUUID();
      await client.placeOrder.mutate({ sku: "tea", qty: 1 }, { context: idempotencyContext({ key }) });
      const { progress, context } = recorder(key);
      const error = await client.placeOrder.mutate({ sku: "tea", qty: 9 }, { context }).catch((caught) => caught);
      expect(error).toBeInstanceOf(TRPCClientError);
      expect(error.data).toMatchObject({
        httpStatus: 422,
        idempotency: { code: "FINGERPRINT_MISMATCH", retryable: false },
      });
      expect(isRetryableError(error)).toBe(false);
      expect(progress).toEqual([
        { type: "request", key, attempt: 1 },
        { type: "failure", key, attempt: 1, retryable: false, error },
      ]);
      expect(keysOf(proxy)).toHaveLength(2);
      expect(executions.get("placeOrder")).toBe(1);
      expect(await ordersOf(user)).toBe(1);
    });

    it("400 for input that fails validation, and a stored 404 from the procedure: one request each", async () => {
      const { client, proxy } = await start();
      const invalid = await client.placeOrder.mutate({ sku: "tea", qty: 0 }).catch((caught) => caught);
      expect(invalid.data).toMatchObject({ httpStatus: 400 });
      expect(isRetryableError(invalid)).toBe(false);
      const unknown = await client.placeOrder.mutate({ sku: "unknown", qty: 1 }).catch((caught) => caught);
      expect(unknown.data).toMatchObject({ httpStatus: 404 });
      expect(keysOf(proxy)).toHaveLength(2);
    });

    it.runIf(transport.readsEveryStatus)("a proxy's 4xx is not retried either", async () => {
      const { client, proxy, executions } = await start();
      proxy.inject({ kind: "answer", status: 413, body: "request entity too large" });
      const error = await client.placeOrder.mutate({ sku: "tea", qty: 1 }).catch((caught) => caught);
      expect(error).toBeInstanceOf(TRPCClientError);
      expect(isRetryableError(error)).toBe(false);
      expect(keysOf(proxy)).toHaveLength(1);
      expect(executions.get("placeOrder")).toBeUndefined();
    });
  });

  describe("one classification with the server", () => {
    it("does not retry the procedure's own 409: it would run again to the same conflict", async () => {
      const { client, proxy, executions } = await start();
      const error = await client.conflicting.mutate({ n: 1 }).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ data: { httpStatus: 409 } });
      expect(isRetryableError(error)).toBe(false);
      expect(keysOf(proxy)).toHaveLength(1);
      expect(executions.get("conflicting")).toBe(1);
    });

    it("retries a 408 the server released, and the retry runs", async () => {
      const { client, proxy, executions } = await start();
      expect(await client.timeoutOnce.mutate({ n: 7 })).toEqual({ n: 7 });
      expect(keysOf(proxy)).toHaveLength(2);
      expect(new Set(keysOf(proxy)).size).toBe(1);
      expect(executions.get("timeoutOnce")).toBe(2);
    });

    it.runIf(transport.carriesCallHeaders)(
      "gives up on a replayed answer, even a 500 the server stored: it can never change",
      async () => {
        const { client, proxy, executions, server, user } = await start({ storeServerErrors: true });
        const key = globalThis.crypto.randomUUID();
        expect((await mutate(server.url, "flaky", { n: 1 }, { key, user })).status).toBe(500);
        const { progress, context } = recorder(key);
        const error = await client.flaky.mutate({ n: 1 }, { context }).catch((caught: unknown) => caught);
        expect(error).toMatchObject({ data: { httpStatus: 500 } });
        expect(progress.map((event) => event.type)).toEqual(["request", "failure"]);
        expect(keysOf(proxy)).toHaveLength(1);
        expect(executions.get("flaky")).toBe(1);
      },
    );
  });
});

describe("over a transport of your own", () => {
  /** A terminating link that never answers, and completes without a value when its operation is aborted. */
  const silentUntilAborted: TRPCLink<AppRouter> =
    () =>
    ({ op }) =>
      observable((observer) => {
        op.signal?.addEventListener("abort", () => observer.complete(), { once: true });
      });

  it("settles an attempt the transport completes without an answer once the caller aborts", async () => {
    const client = createTRPCClient<AppRouter>({ links: [idempotencyRetryLink({ retry: fast }), silentUntilAborted] });
    const controller = new AbortController();
    const sending = client.placeOrder
      .mutate({ sku: "tea", qty: 1 }, { signal: controller.signal })
      .catch((error: unknown) => error);
    controller.abort();
    expect(await sending).toBeInstanceOf(TRPCClientError);
  });

  it("gives up an attempt that never answers after attemptTimeoutMs, aborts it below, and sends it again with its key", async () => {
    const sent: Array<{ key: unknown; signal: AbortSignal | undefined }> = [];
    const hangs: TRPCLink<AppRouter> =
      () =>
      ({ op }) =>
        observable(() => {
          sent.push({ key: idempotencyHeaders({ op })["Idempotency-Key"], signal: op.signal ?? undefined });
        });
    const { clock, advance } = testClock();
    const client = createTRPCClient<AppRouter>({
      links: [idempotencyRetryLink({ retry: { ...fast, maxAttempts: 2 }, attemptTimeoutMs: 5_000, clock }), hangs],
    });
    const { progress, context } = recorder();
    const sending = client.placeOrder.mutate({ sku: "tea", qty: 1 }, { context }).catch((error: unknown) => error);
    await expect.poll(() => sent.length, { interval: 0 }).toBe(1);
    advance(4_999);
    expect(sent[0]?.signal?.aborted).toBe(false);
    advance(1);
    await expect.poll(() => sent[0]?.signal?.aborted, { interval: 0 }).toBe(true);
    await expect.poll(() => progress.some((event) => event.type === "retry"), { interval: 0 }).toBe(true);
    advance(1_000);
    await expect.poll(() => sent.length, { interval: 0 }).toBe(2);
    expect(sent[1]?.key).toBe(sent[0]?.key);
    advance(5_000);
    const error = await sending;
    expect(isRetryableError(error)).toBe(true);
    expect(progress.at(-1)).toMatchObject({ type: "failure", attempt: 2, retryable: true });
  });

  it("takes a completion without an answer for a lost answer: retried with the same key, then given up as retryable", async () => {
    const keys: unknown[] = [];
    const completesAtOnce: TRPCLink<AppRouter> =
      () =>
      ({ op }) =>
        observable((observer) => {
          keys.push(idempotencyHeaders({ op })["Idempotency-Key"]);
          observer.complete();
        });
    const { clock, advance } = testClock();
    const client = createTRPCClient<AppRouter>({
      links: [idempotencyRetryLink({ retry: { ...fast, maxAttempts: 3 }, clock }), completesAtOnce],
    });
    const { progress, context } = recorder();
    const sending = client.placeOrder.mutate({ sku: "tea", qty: 1 }, { context }).catch((error: unknown) => error);
    await expect.poll(() => progress.filter((event) => event.type === "retry").length, { interval: 0 }).toBe(1);
    advance(1_000);
    await expect.poll(() => progress.filter((event) => event.type === "retry").length, { interval: 0 }).toBe(2);
    advance(1_000);
    const error = await sending;
    expect(isRetryableError(error)).toBe(true);
    expect(progress.at(-1)).toMatchObject({ type: "failure", attempt: 3, retryable: true });
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
  });
});

describe("a terminating link that does not write the key", () => {
  it("is refused by the server (400 KEY_MISSING) before anything runs, and not retried", async () => {
    const app = createApp({ db: database.db });
    const server = await serveFetch(app.handler);
    const proxy = await startFaultProxy(server.url);
    closers.push(proxy, server);
    const url = `${proxy.url}/trpc`;
    const headers = { "x-user": `user-${globalThis.crypto.randomUUID()}` };
    const client = createTRPCClient<AppRouter>({
      links: [idempotencyRetryLink({ retry: fast }), httpLink({ url, transformer, headers })],
    });
    const error = await client.placeOrder.mutate({ sku: "tea", qty: 1 }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ data: { httpStatus: 400, idempotency: { code: "KEY_MISSING" } } });
    expect(keysOf(proxy)).toEqual([undefined]);
    expect(app.executions.get("placeOrder")).toBeUndefined();
  });
});

describe("without a data transformer", () => {
  it("keys, retries and replays a router that has none", async () => {
    let runs = 0;
    const t = initTRPC.context<{ req: Request; resHeaders: Headers }>().create();
    const router = t.router({
      add: t.procedure
        .use(idempotency({ store: drizzleStore({ db: database.db }), scope: () => "everyone" }))
        .input(z.object({ a: z.number(), b: z.number() }))
        .mutation(({ input }) => {
          runs++;
          return { sum: input.a + input.b, at: new Date(0).toISOString() };
        }),
    });
    const server = await serveRouter(router);
    const proxy = await startFaultProxy(server.url);
    closers.push(proxy, server);
    const client = createTRPCClient<typeof router>({
      links: [idempotencyLink<typeof router>({ url: `${proxy.url}/trpc`, retry: fast })],
    });
    proxy.inject({ kind: "drop-response" });
    const { progress, context } = recorder();
    expect(await client.add.mutate({ a: 2, b: 3 }, { context })).toEqual({ sum: 5, at: "1970-01-01T00:00:00.000Z" });
    expect(runs).toBe(1);
    expect(progress.at(-1)).toMatchObject({ type: "success", attempt: 2, replayed: true });
  });

  it("requires the transformer exactly when the router has one", () => {
    expectTypeOf(idempotencyLink<AppRouter>)
      .parameter(0)
      .toHaveProperty("transformer");
    // @ts-expect-error a superjson router: the link must be given its transformer
    idempotencyLink<AppRouter>({ url: "http://127.0.0.1/trpc" });
  });
});

describe("without the app's error formatter", () => {
  const resendHeaderOf = (error: unknown) => {
    const response = (error as TRPCClientError<AppRouter>).meta?.response;
    return response instanceof Response ? response.headers.get("Idempotent-Resend") : undefined;
  };

  /** A router with no `idempotencyErrorData` in its formatter, as the README's quickstart had: only headers tell. */
  async function serveWithout(store: IdempotencyStore<unknown>, answer: () => unknown) {
    // A short lease: a call whose answer the store never takes lets its key go soon after the test.
    let runs = 0;
    const t = initTRPC.context<{ req: Request; resHeaders: Headers }>().create();
    const router = t.router({
      pay: t.procedure
        .use(idempotency({ store, mode: "lease", leaseMs: 1_000, scope: () => "everyone" }))
        .mutation(() => {
          runs++;
          return answer();
        }),
    });
    const server = await serveRouter(router);
    const proxy = await startFaultProxy(server.url);
    closers.push(proxy, server);
    const client = createTRPCClient<typeof router>({
      links: [idempotencyLink<typeof router>({ url: `${proxy.url}/trpc`, retry: fast })],
    });
    return { client, proxy, runs: () => runs };
  }

  it("never sends a kept refusal's key again: a 500 marked Idempotent-Resend: never is one request", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const { client, proxy, runs } = await serveWithout(drizzleStore({ db: database.db }), () => new Map([[1, 2]]));
      const error = await client.pay.mutate().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(TRPCClientError);
      expect(isRetryableError(error)).toBe(false);
      expect(keysOf(proxy)).toHaveLength(1);
      expect(resendHeaderOf(error)).toBe("never");
      expect(runs()).toBe(1);
    } finally {
      logged.mockRestore();
    }
  });

  it("never sends a call that ran unrecorded again by itself: Idempotent-Resend: check, one request, one run", async () => {
    const store = drizzleStore({ db: database.db });
    const unrecorded: IdempotencyStore<unknown> = {
      ...store,
      complete: () => Promise.reject(new Error("connection reset")),
      renew: () => Promise.reject(new Error("connection reset")),
    };
    const { client, proxy, runs } = await serveWithout(unrecorded, () => ({ paid: true }));
    const error = await client.pay.mutate().catch((caught: unknown) => caught);
    expect(isRetryableError(error)).toBe(false);
    expect(mayHaveRun(error)).toBe(true);
    expect(keysOf(proxy)).toHaveLength(1);
    expect(resendHeaderOf(error)).toBe("check");
    expect(runs()).toBe(1);
  });
});
