// @vitest-environment jsdom
/**
 * The hook's state machine, on fake timers: the real idempotencyLink and tRPC client, with `fetch` answered by the
 * test, request by request, so each race is staged exactly (an answer arriving after reset(), a retry scheduled for
 * an abandoned action). What the server does with the requests is tested against a real one in apps/web/test.
 */

import { fingerprint } from "@idemkit/core";
import type { IdempotencyOutcomeAnswer } from "@idemkit/core/client";
import { thisTab } from "@idemkit/core/client";
import { idempotencyLink } from "@idemkit/trpc/client";
import {
  dehydrate,
  hydrate,
  MutationObserver,
  onlineManager,
  QueryClient,
  QueryClientProvider,
} from "@tanstack/react-query";
import { act, cleanup, renderHook } from "@testing-library/react";
import { createTRPCClient } from "@trpc/client";
import { initTRPC } from "@trpc/server";
import { createTRPCContext, createTRPCOptionsProxy } from "@trpc/tanstack-react-query";
import { createElement, type ReactNode } from "react";
import { renderToString } from "react-dom/server";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  ActionInFlightError,
  idempotentMutationDefaults,
  type KeyStorage,
  type UseIdempotentMutationOptions,
  useIdempotentMutation,
} from "../src/index.js";

const t = initTRPC.create();
const router = t.router({
  placeOrder: t.procedure
    .input((input) => input as { items: string[] })
    .mutation(({ input }) => ({ orderId: input.items.length })),
});
type Router = typeof router;
const { TRPCProvider, useTRPC } = createTRPCContext<Router>();

/** A request the link sent, waiting for the test to answer it. */
interface Sent {
  key: string | null;
  body: string;
  answer(status: number, body: unknown, headers?: Record<string, string>): void;
  /** Answers with this text as the body, whole or not. */
  raw(status: number, text: string): void;
  drop(): void;
}
let sent: Sent[];

const fakeFetch = (_url: unknown, init?: { headers?: unknown; body?: unknown }) =>
  new Promise<Response>((resolve, reject) => {
    const headers = new Headers(init?.headers as HeadersInit | undefined);
    sent.push({
      key: headers.get("idempotency-key"),
      body: String(init?.body),
      raw: (status, text) => resolve(new Response(text, { status, headers: { "content-type": "application/json" } })),
      answer: (status, body, extra = {}) =>
        resolve(
          new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...extra } }),
        ),
      drop: () => reject(new TypeError("Failed to fetch")),
    });
  });

const placed = (orderId: number) => ({ result: { data: { orderId } } });
const refused = (httpStatus: number, message: string) => ({
  error: { message, code: -32600, data: { code: "FORBIDDEN", httpStatus, idempotency: { retryable: false } } },
});
const busy = { error: { message: "busy", code: -32603, data: { code: "INTERNAL_SERVER_ERROR", httpStatus: 503 } } };

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
  sent = [];
  sessionStorage.clear();
  localStorage.clear();
});
afterEach(() => {
  cleanup();
  onlineManager.setOnline(true);
  vi.useRealTimers();
});

interface RenderOptions {
  storage?: KeyStorage | "memory" | (() => KeyStorage);
  strict?: boolean;
  onSuccess?: (data: { orderId: number }, input: { items: string[] }, onMutateResult: unknown) => void;
  onMutate?: (input: { items: string[] }) => unknown;
  lookup?: UseIdempotentMutationOptions<never>["lookup"];
  lookupMaxRunningMs?: number;
  storageKey?: string;
  tabWaitMs?: number;
  afterSuccess?: "replay" | "new-action";
  /** The page's clients, when the test needs them (a page that persists its mutations, or restores them). */
  clients?: Clients;
}

interface Clients {
  queryClient: QueryClient;
  trpcClient: ReturnType<typeof createTRPCClient<Router>>;
}

/** A page's tRPC and TanStack Query clients, with the real link, sending through the test's `fetch`. */
function clientsOfAPage(): Clients {
  return {
    queryClient: new QueryClient(),
    trpcClient: createTRPCClient<Router>({
      links: [idempotencyLink<Router>({ url: "http://shop.test/trpc", fetch: fakeFetch, retry: { maxAttempts: 3 } })],
    }),
  };
}

function render({
  storage,
  strict = false,
  onSuccess,
  onMutate,
  lookup,
  lookupMaxRunningMs,
  storageKey,
  tabWaitMs,
  afterSuccess,
  clients,
}: RenderOptions = {}) {
  const { queryClient, trpcClient } = clients ?? clientsOfAPage();
  const wrapper = ({ children }: { children: ReactNode }) =>
    createElement(
      QueryClientProvider,
      { client: queryClient },
      createElement(TRPCProvider, { trpcClient, queryClient, children }),
    );
  return renderHook(
    () =>
      useIdempotentMutation(useTRPC().placeOrder, {
        ...(storage !== undefined && { storage: typeof storage === "function" ? storage() : storage }),
        ...(onSuccess && { onSuccess }),
        ...(onMutate && { onMutate }),
        ...(lookup && { lookup }),
        ...(lookupMaxRunningMs !== undefined && { lookupMaxRunningMs }),
        ...(storageKey !== undefined && { storageKey }),
        ...(tabWaitMs !== undefined && { tabWaitMs }),
        ...(afterSuccess !== undefined && { afterSuccess }),
      }),
    // StrictMode as React Testing Library applies it: a <StrictMode> in the wrapper does not run effects twice.
    { wrapper, reactStrictMode: strict },
  );
}

/** Lets promises, React and TanStack Query's zero-delay notifications settle, without moving the clock. */
const settle = () => act(() => vi.advanceTimersByTimeAsync(0));

const tea = { items: ["tea"] };
const mugs = { items: ["mug", "mug"] };

/** Sends an action for tea, abandons it with reset(), and starts one for `next`: where each race below begins. */
async function abandonedThen(next: typeof tea) {
  const rendered = render();
  act(() => rendered.result.current.mutate(tea));
  await settle();
  act(() => rendered.result.current.reset());
  act(() => rendered.result.current.mutate(next));
  await settle();
  return rendered;
}

describe("an action abandoned by reset()", () => {
  it("does not clear the next action's in-flight guard when it settles: a double click still sends once", async () => {
    const { result } = await abandonedThen(tea);
    expect(sent).toHaveLength(2);

    sent[0]?.answer(200, placed(1));
    await settle();
    act(() => {
      result.current.mutate(tea);
      result.current.mutate(tea);
    });
    await settle();
    expect(sent).toHaveLength(2);
  });

  it("says what the attempt a retry waits after was answered: a status, or nothing (the connection was lost)", async () => {
    const { result } = render();
    act(() => result.current.mutate(tea));
    await settle();
    sent[0]?.answer(503, busy);
    await settle();
    expect(result.current).toMatchObject({ failedAttemptStatus: 503, nextRetryAt: expect.any(Number) });
    await act(() => vi.advanceTimersByTimeAsync(30_000));
    sent[1]?.drop();
    await settle();
    expect(result.current).toMatchObject({ failedAttemptStatus: undefined, nextRetryAt: expect.any(Number) });
    await act(() => vi.advanceTimersByTimeAsync(30_000));
    sent[2]?.answer(200, placed(1));
    await settle();
    expect(result.current).toMatchObject({ isSuccess: true, failedAttemptStatus: undefined, nextRetryAt: undefined });
  });

  it("neither retries nor reports into the next action", async () => {
    const { result } = render();
    act(() => result.current.mutate(tea));
    await settle();
    const abandonedKey = sent[0]?.key;
    sent[0]?.drop();
    await settle(); // the link schedules a retry of the abandoned action
    act(() => result.current.reset());
    act(() => result.current.mutate(mugs));
    await settle();
    expect(result.current).toMatchObject({ attempt: 1, nextRetryAt: undefined });

    await act(() => vi.advanceTimersByTimeAsync(60_000));
    expect(sent.map((request) => request.key).filter((key) => key === abandonedKey)).toHaveLength(1);
    expect(result.current).toMatchObject({ attempt: 1, nextRetryAt: undefined, replayed: false });
  });

  it("does not mark the next action replayed when its own answer was a replay", async () => {
    const { result } = await abandonedThen(mugs);
    sent[0]?.answer(200, placed(1), { "idempotent-replayed": "true" });
    await settle();
    expect(result.current.replayed).toBe(false);
    sent[1]?.answer(200, placed(2));
    await settle();
    expect(result.current).toMatchObject({ isSuccess: true, replayed: false, data: { orderId: 2 } });
  });
});

describe("an action abandoned by reset() before it was sent", () => {
  it("in the same handler as the next action's start: each is sent with its own key, or not at all", async () => {
    const { result } = render();
    act(() => {
      result.current.mutate(tea);
      result.current.reset();
      result.current.mutate(mugs);
    });
    await settle();
    expect(sent.map((request) => [request.key, JSON.parse(request.body)])).toEqual([[result.current.key, mugs]]);
  });

  it("while paused offline: coming back online sends only the next action, with its key", async () => {
    onlineManager.setOnline(false);
    const { result } = render();
    act(() => result.current.mutate(tea));
    await settle();
    act(() => result.current.reset());
    act(() => result.current.mutate(mugs));
    await settle();
    expect(sent).toHaveLength(0);
    act(() => onlineManager.setOnline(true));
    await settle();
    expect(sent.map((request) => [request.key, JSON.parse(request.body)])).toEqual([[result.current.key, mugs]]);
  });
});

describe("the key's life", () => {
  it("after a success, pressing again with the same input is the same action by default, and a new one with afterSuccess: new-action", async () => {
    for (const [afterSuccess, sameKey] of [
      [undefined, true],
      ["new-action", false],
    ] as const) {
      sent = [];
      const form = render(afterSuccess ? { afterSuccess } : {});
      act(() => {
        // Two presses in one task, before any answer: one action, whatever the setting.
        form.result.current.mutate(tea);
        form.result.current.mutate(tea);
      });
      await settle();
      expect(sent).toHaveLength(1);
      sent[0]?.answer(200, placed(1));
      await settle();
      act(() => form.result.current.mutate(tea));
      await settle();
      expect(sent).toHaveLength(2);
      expect(sent[1]?.key === sent[0]?.key).toBe(sameKey);
      form.unmount();
      sessionStorage.clear();
    }
  });

  it("after a refusal (a stored 4xx), pressing again with the same input is a new attempt with a new key", async () => {
    const first = render();
    act(() => first.result.current.mutate(tea));
    await settle();
    sent[0]?.answer(403, refused(403, "Your card was declined"));
    await settle();
    expect(first.result.current).toMatchObject({ isError: true, retryable: false });

    act(() => first.result.current.mutate(tea));
    await settle();
    expect(sent[1]?.key).not.toBe(sent[0]?.key);
    sent[1]?.answer(403, refused(403, "Your card was declined"));
    await settle();

    // Also after a reload: the refusal is remembered with the action.
    first.unmount();
    const reloaded = render();
    await settle();
    act(() => reloaded.result.current.mutate(tea));
    await settle();
    expect(new Set(sent.map((request) => request.key)).size).toBe(3);
  });

  it("after a server error the server stored (storeServerErrors: its retry is a replayed 500), pressing again is a new attempt with a new key", async () => {
    const { result } = render();
    act(() => result.current.mutate(tea));
    await settle();
    sent[0]?.answer(500, busy);
    await act(() => vi.advanceTimersByTimeAsync(60_000)); // the link retries the 500 with the same key...
    sent[1]?.answer(500, busy, { "idempotent-replayed": "true" }); // ...and the store replays it
    await settle();
    expect(sent.map((request) => request.key)).toEqual([sent[0]?.key, sent[0]?.key]);
    expect(result.current).toMatchObject({ isError: true, retryable: false });

    act(() => result.current.mutate(tea));
    await settle();
    expect(sent).toHaveLength(3);
    expect(sent[2]?.key).not.toBe(sent[0]?.key);
    expect(result.current.key).toBe(sent[2]?.key);
  });

  it.each([
    ["", {}],
    [
      ", also when the app's own onSuccess throws",
      {
        onSuccess: () => {
          throw new Error("navigation failed");
        },
      },
    ],
  ] satisfies Array<[string, RenderOptions]>)(
    "after a success%s, the same input keeps its key (and the server replays it)",
    async (_, options) => {
      const { result } = render(options);
      act(() => result.current.mutate(tea));
      await settle();
      sent[0]?.answer(200, placed(1));
      await settle();
      act(() => result.current.mutate(tea));
      await settle();
      expect(sent[1]?.key).toBe(sent[0]?.key);
    },
  );

  it("after a failure that can still succeed, the same input keeps its key", async () => {
    const { result } = render();
    act(() => result.current.mutate(tea));
    await settle();
    for (let attempt = 0; attempt < 3; attempt++) {
      sent[attempt]?.drop();
      await act(() => vi.advanceTimersByTimeAsync(60_000));
    }
    expect(result.current).toMatchObject({ isError: true, retryable: true });
    act(() => result.current.mutate(tea));
    await settle();
    expect(new Set(sent.map((request) => request.key)).size).toBe(1);
  });

  it("sends an answer cut short after the server committed (a 200 whose body does not parse) again with its key", async () => {
    const { result } = render();
    act(() => result.current.mutate(tea));
    await settle();
    sent[0]?.raw(200, '{"result":{"da');
    await act(() => vi.advanceTimersByTimeAsync(60_000));
    expect(sent[1]?.key).toBe(sent[0]?.key);
    sent[1]?.answer(200, placed(1));
    await settle();
    expect(result.current).toMatchObject({ isSuccess: true, attempt: 2 });
  });

  it.each([
    [
      "a 409 that hides when to come back (no Retry-After, no verdict in its data)",
      (request: Sent) =>
        request.answer(409, {
          error: { message: "still running", code: -32603, data: { code: "CONFLICT", httpStatus: 409 } },
        }),
    ],
  ])("keeps the key after %s: the action may have run, so pressing again must replay it", async (_, answer) => {
    const { result } = render();
    act(() => result.current.mutate(tea));
    await settle();
    answer(sent[0] as Sent);
    await act(() => vi.advanceTimersByTimeAsync(60_000));
    expect(result.current.isError).toBe(true);
    act(() => result.current.mutate(tea));
    await settle();
    expect(new Set(sent.map((request) => request.key)).size).toBe(1);
  });

  it("records a refusal in the storage also when the storage object is new each render", async () => {
    const inline = (): KeyStorage => ({
      getItem: (name) => sessionStorage.getItem(name),
      setItem: (name, value) => sessionStorage.setItem(name, value),
      removeItem: (name) => sessionStorage.removeItem(name),
    });
    const { result } = render({ storage: inline });
    act(() => result.current.mutate(tea));
    await settle();
    sent[0]?.answer(403, refused(403, "Your card was declined"));
    await settle();
    expect(JSON.parse(sessionStorage.getItem("idemkit:placeOrder") ?? "{}")).toMatchObject({ refused: true });
    act(() => result.current.mutate(tea));
    await settle();
    expect(sent[1]?.key).not.toBe(sent[0]?.key);
  });

  it("refuses another input while an action is in flight, instead of joining it", async () => {
    const { result } = render();
    let first: Promise<unknown> | undefined;
    let other: Promise<unknown> | undefined;
    act(() => {
      first = result.current.mutateAsync(tea);
      other = result.current.mutateAsync(mugs);
    });
    await expect(other).rejects.toBeInstanceOf(ActionInFlightError);
    await settle();
    expect(sent).toHaveLength(1);
    sent[0]?.answer(200, placed(1));
    await expect(first).resolves.toEqual({ orderId: 1 });
  });

  it("keeps the key in the component when the storage refuses to write, even if the storage object is new each render", async () => {
    const refusing = (): KeyStorage => ({
      getItem: () => null,
      setItem: () => {
        throw new DOMException("quota", "QuotaExceededError");
      },
      removeItem: () => {},
    });
    const { result, rerender } = render({ storage: refusing });
    act(() => result.current.mutate(tea));
    await settle();
    for (let attempt = 0; attempt < 3; attempt++) {
      sent[attempt]?.answer(503, busy);
      await act(() => vi.advanceTimersByTimeAsync(60_000));
    }
    expect(result.current).toMatchObject({ isError: true, retryable: true });
    rerender();
    act(() => result.current.mutate(tea));
    await settle();
    expect(new Set(sent.map((request) => request.key)).size).toBe(1);
  });
});

describe("the outcome lookup", () => {
  /** A lookup that answers from `answers` in turn (the last one again once they run out), recording what it asked. */
  function lookupAnswering(...answers: IdempotencyOutcomeAnswer[]) {
    const asked: Array<{ path: string; key: string }> = [];
    const lookup = async (input: { path: string; key: string }, _options: { signal: AbortSignal }) => {
      asked.push(input);
      return answers[Math.min(asked.length, answers.length) - 1] as IdempotencyOutcomeAnswer;
    };
    return { asked, lookup };
  }
  /** What a page left in sessionStorage before its reload: an action for `tea`. */
  const leftBehind = (key: string) =>
    sessionStorage.setItem("idemkit:placeOrder", JSON.stringify({ key, fingerprint: fingerprint(tea) }));

  it("after a reload, shows a completed action as its replay would, without sending its input again", async () => {
    const key = globalThis.crypto.randomUUID();
    leftBehind(key);
    const { asked, lookup } = lookupAnswering({ state: "running" }, { state: "completed", data: { orderId: 7 } });
    const { result } = render({ lookup });
    await settle();
    expect(result.current).toMatchObject({ key, isSuccess: false, outcome: { state: "running" } });
    await act(() => vi.advanceTimersByTimeAsync(1_000));
    expect(result.current).toMatchObject({
      key,
      isSuccess: true,
      status: "success",
      replayed: true,
      data: { orderId: 7 },
      outcome: { state: "completed" },
    });
    expect(asked).toEqual([
      { path: "placeOrder", key },
      { path: "placeOrder", key },
    ]);
    expect(sent).toHaveLength(0);
  });

  it("after a reload, keeps the key of an action the server does not know (pressing again sends it with that key)", async () => {
    const key = globalThis.crypto.randomUUID();
    leftBehind(key);
    const { lookup } = lookupAnswering({ state: "unknown" });
    const { result } = render({ lookup });
    await settle();
    expect(result.current).toMatchObject({ isIdle: true, outcome: { state: "unknown" } });
    act(() => result.current.mutate(tea));
    await settle();
    expect(sent.map((request) => request.key)).toEqual([key]);
  });

  it.each([
    ["refused (a stored 4xx)", 403, { code: "FORBIDDEN", message: "Your card was declined" }],
    ["failed with a 5xx it stored (storeServerErrors)", 500, { code: "INTERNAL_SERVER_ERROR", message: "boom" }],
  ])(
    "after a reload, retires the key of an action the server %s: pressing again is a new attempt",
    async (_, status, error) => {
      const key = globalThis.crypto.randomUUID();
      leftBehind(key);
      const { lookup } = lookupAnswering({ state: "failed", status, error });
      const { result } = render({ lookup });
      await settle();
      expect(result.current.outcome).toEqual({ state: "failed", status, error });
      act(() => result.current.mutate(tea));
      await settle();
      expect(sent).toHaveLength(1);
      expect(sent[0]?.key).not.toBe(key);
    },
  );

  it("puts the answer it found in TanStack Query's cache as the action's settled mutation, which the hook shows", async () => {
    const key = globalThis.crypto.randomUUID();
    leftBehind(key);
    const { lookup } = lookupAnswering({ state: "completed", data: { orderId: 7 } });
    const clients = clientsOfAPage();
    const { result } = render({ lookup, clients });
    await settle();
    const settled = clients.queryClient.getMutationCache().findAll({ status: "success" });
    expect(settled.map((mutation) => mutation.state.data)).toEqual([{ orderId: 7 }]);
    expect(result.current).toMatchObject({ status: "success", data: settled[0]?.state.data, isPaused: false });
    // Nothing of the app's ran for it: no onMutate result, no input it never saw.
    expect(result.current).toMatchObject({ context: undefined, variables: undefined });
  });

  it("keeps showing the answer it found past TanStack Query's gcTime, and takes it out of the cache on reset()", async () => {
    const key = globalThis.crypto.randomUUID();
    leftBehind(key);
    const { lookup } = lookupAnswering({ state: "completed", data: { orderId: 7 } });
    const clients = clientsOfAPage();
    const { result } = render({ lookup, clients });
    await settle();
    await act(() => vi.advanceTimersByTimeAsync(10 * 60_000));
    expect(result.current).toMatchObject({ isSuccess: true, data: { orderId: 7 } });
    act(() => result.current.reset());
    await settle();
    expect(clients.queryClient.getMutationCache().findAll({ status: "success" })).toEqual([]);
    expect(result.current.isIdle).toBe(true);
  });

  it("says it is checking from the moment a reload finds the action until the lookup answers", async () => {
    const key = globalThis.crypto.randomUUID();
    leftBehind(key);
    let answer: (outcome: IdempotencyOutcomeAnswer) => void = () => {};
    const lookup = () =>
      new Promise<IdempotencyOutcomeAnswer>((resolve) => {
        answer = resolve;
      });
    const { result } = render({ lookup });
    await settle();
    expect(result.current).toMatchObject({ key, isCheckingOutcome: true, outcome: undefined, isIdle: true });
    answer({ state: "unknown" });
    await settle();
    expect(result.current).toMatchObject({ key, isCheckingOutcome: false, outcome: { state: "unknown" } });
  });

  it("stops saying it is checking when the lookup fails, and while a running call is asked about again", async () => {
    const key = globalThis.crypto.randomUUID();
    leftBehind(key);
    let asked = 0;
    const lookup = async () => {
      asked++;
      if (asked === 1) return { state: "running" } as const;
      throw new Error("lookup unreachable");
    };
    const { result } = render({ lookup });
    await settle();
    expect(result.current).toMatchObject({ isCheckingOutcome: true, outcome: { state: "running" } });
    await act(() => vi.advanceTimersByTimeAsync(1_000));
    expect(asked).toBe(2);
    expect(result.current.isCheckingOutcome).toBe(false);
  });

  it("under StrictMode (the effect that asks runs twice), still shows what it found", async () => {
    const key = globalThis.crypto.randomUUID();
    leftBehind(key);
    const { lookup } = lookupAnswering({ state: "completed", data: { orderId: 7 } });
    const { result } = render({ lookup, strict: true });
    await settle();
    expect(result.current).toMatchObject({ key, isSuccess: true, replayed: true, data: { orderId: 7 } });
  });

  it("keeps asking, less and less often, while the call runs (past 30 answers), then shows it completed", async () => {
    const key = globalThis.crypto.randomUUID();
    leftBehind(key);
    const running = Array.from({ length: 31 }, () => ({ state: "running" }) as const);
    const { asked, lookup } = lookupAnswering(...running, { state: "completed", data: { orderId: 7 } });
    const { result } = render({ lookup });
    await settle();
    // Asked at once, then after 1, 2 and 4 s: the pause doubles.
    await act(() => vi.advanceTimersByTimeAsync(10_000));
    expect(asked).toHaveLength(4);
    expect(result.current.outcome).toEqual({ state: "running" });

    await act(() => vi.advanceTimersByTimeAsync(15 * 60_000));
    expect(asked).toHaveLength(32);
    expect(result.current).toMatchObject({ key, isSuccess: true, replayed: true, data: { orderId: 7 } });
    expect(sent).toHaveLength(0);
  });

  it.each([
    ["by default, 16 minutes (the middleware's default maxHoldMs plus one leaseMs)", undefined, 16 * 60_000],
    ["with lookupMaxRunningMs", 90_000, 90_000],
  ])(
    "stops asking once the call can no longer be running, %s: it shows unknown, and a press sends with the same key",
    async (_, lookupMaxRunningMs, boundMs) => {
      const key = globalThis.crypto.randomUUID();
      leftBehind(key);
      const { asked, lookup } = lookupAnswering({ state: "running" });
      const { result } = render({ lookup, ...(lookupMaxRunningMs !== undefined && { lookupMaxRunningMs }) });
      await settle();
      await act(() => vi.advanceTimersByTimeAsync(boundMs - 1));
      expect(result.current.outcome).toEqual({ state: "running" });
      await act(() => vi.advanceTimersByTimeAsync(1));
      expect(result.current).toMatchObject({ key, isIdle: true, outcome: { state: "unknown" } });
      const askedInAll = asked.length;
      expect(askedInAll).toBeLessThanOrEqual(40);
      await act(() => vi.advanceTimersByTimeAsync(60 * 60_000));
      expect(asked).toHaveLength(askedInAll);

      act(() => result.current.mutate(tea));
      await settle();
      expect(sent.map((request) => request.key)).toEqual([key]);
    },
  );

  it("stops asking once the form is gone", async () => {
    const key = globalThis.crypto.randomUUID();
    leftBehind(key);
    const { asked, lookup } = lookupAnswering({ state: "running" });
    const { unmount } = render({ lookup });
    await settle();
    unmount();
    await act(() => vi.advanceTimersByTimeAsync(60_000));
    expect(asked).toHaveLength(1);
  });

  it("after the link gave up, shows the action completed if the server has it", async () => {
    const { asked, lookup } = lookupAnswering({ state: "completed", data: { orderId: 9 } });
    const { result } = render({ lookup });
    act(() => result.current.mutate(tea));
    await settle();
    for (let attempt = 0; attempt < 3; attempt++) {
      sent[attempt]?.drop();
      await act(() => vi.advanceTimersByTimeAsync(60_000));
    }
    expect(result.current).toMatchObject({ isSuccess: true, replayed: true, data: { orderId: 9 } });
    expect(asked).toEqual([{ path: "placeOrder", key: sent[0]?.key }]);
  });
});

describe("two forms on one procedure", () => {
  it("mounted at once with one storage name: the second keeps its action in memory, says why, and neither takes the other's after a reload", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const lookup = async ({ key }: { key: string }) =>
        ({ state: "completed", data: { orderId: key === sent[0]?.key ? 1 : 2 } }) as const;
      const page = [render(), render()];
      await settle();
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/placeOrder.*storageKey/s));
      act(() => page[0]?.result.current.mutate(tea));
      act(() => page[1]?.result.current.mutate(mugs));
      await settle();
      sent[0]?.answer(200, placed(1));
      sent[1]?.answer(200, placed(2));
      await settle();
      for (const form of page) form.unmount();

      const reloaded = [render({ lookup }), render({ lookup })];
      await settle();
      expect(reloaded.map((form) => [form.result.current.key, form.result.current.data])).toEqual([
        [sent[0]?.key, { orderId: 1 }],
        [undefined, undefined],
      ]);
    } finally {
      warn.mockRestore();
    }
  });

  it("each with its own storageKey keep their own actions: after a reload, each shows its own order", async () => {
    const lookup = async ({ key }: { key: string }) =>
      ({ state: "completed", data: { orderId: key === sent[0]?.key ? 1 : 2 } }) as const;
    const page = [render({ storageKey: "idemkit:placeOrder:tea" }), render({ storageKey: "idemkit:placeOrder:mugs" })];
    act(() => page[0]?.result.current.mutate(tea));
    act(() => page[1]?.result.current.mutate(mugs));
    await settle();
    sent[0]?.answer(200, placed(1));
    sent[1]?.answer(200, placed(2));
    await settle();
    for (const form of page) form.unmount();

    const reloaded = [
      render({ storageKey: "idemkit:placeOrder:tea", lookup }),
      render({ storageKey: "idemkit:placeOrder:mugs", lookup }),
    ];
    await settle();
    expect(reloaded.map((form) => [form.result.current.key, form.result.current.data])).toEqual([
      [sent[0]?.key, { orderId: 1 }],
      [sent[1]?.key, { orderId: 2 }],
    ]);
  });
});

describe("offline", () => {
  it("is no longer offline once the link stopped waiting for the connection: the error says to press again", async () => {
    Object.defineProperty(window.navigator, "onLine", { configurable: true, get: () => false });
    try {
      const { result } = render();
      act(() => result.current.mutate(tea));
      await settle();
      sent[0]?.drop();
      await settle();
      expect(result.current).toMatchObject({ isOffline: true, isPaused: false, isPending: true });
      await act(() => vi.advanceTimersByTimeAsync(60_000));
      expect(result.current).toMatchObject({ isOffline: false, isError: true, retryable: true });
    } finally {
      Object.defineProperty(window.navigator, "onLine", { configurable: true, get: () => true });
    }
  });
});

describe("React's modes", () => {
  it("under StrictMode (effects run twice) sends one request for a double click and keeps the key", async () => {
    const first = render({ strict: true });
    await settle();
    act(() => {
      first.result.current.mutate(tea);
      first.result.current.mutate(tea);
    });
    await settle();
    expect(sent).toHaveLength(1);
    sent[0]?.answer(200, placed(1));
    await settle();
    first.unmount();
    const reloaded = render({ strict: true });
    await settle();
    expect(reloaded.result.current.key).toBe(sent[0]?.key);
  });

  it("renders on the server without touching storage or drawing a random value, as a prerender requires", () => {
    touched.length = 0;
    // Next.js 16's prerender (cacheComponents, create-next-app's default) stops the build at crypto.randomUUID() in
    // a Client Component's render: a key is drawn when the user acts, never when React renders.
    const drawn = vi.spyOn(globalThis.crypto, "randomUUID");
    const queryClient = new QueryClient();
    const trpcClient = createTRPCClient<Router>({
      links: [idempotencyLink<Router>({ url: "http://shop.test/trpc", fetch: fakeFetch })],
    });
    const html = renderToString(
      createElement(
        QueryClientProvider,
        { client: queryClient },
        // biome-ignore lint/correctness/noChildrenProp: TRPCProvider's props type requires children
        createElement(TRPCProvider, { trpcClient, queryClient, children: createElement(OrderButton) }),
      ),
    );
    expect(html).toContain("no key yet");
    expect(touched).toEqual([]);
    expect(drawn).not.toHaveBeenCalled();
    drawn.mockRestore();
  });
});

/** What the server-rendering test's storage was asked. */
const touched: string[] = [];
const spying: KeyStorage = {
  getItem: (name) => {
    touched.push(`get ${name}`);
    return null;
  },
  setItem: (name) => touched.push(`set ${name}`),
  removeItem: (name) => touched.push(`remove ${name}`),
};

/** A form's button, as a page would render it on the server. */
function OrderButton() {
  const order = useIdempotentMutation(useTRPC().placeOrder, { storage: spying });
  return createElement("button", { type: "button", disabled: order.isPending }, order.key ?? "no key yet");
}

// jsdom has no Web Locks: these are the browsers without them, where tabs share in-flight actions through
// localStorage alone. Two forms in one document share it as two tabs of one origin do. With Web Locks (a stand-in
// below, on the test's clock; the real ones in Chromium, e2e/tests/tabs.spec.ts), the second tab waits instead.
describe("two tabs pressing with the same input", () => {
  // Each tab has its own sessionStorage: the second form's is kept apart from the first's.
  const ownSession = () => {
    const items = new Map<string, string>();
    return {
      getItem: (name: string) => items.get(name) ?? null,
      setItem: (name: string, value: string) => void items.set(name, value),
      removeItem: (name: string) => void items.delete(name),
    };
  };

  it("while the first tab's action is in flight: the second sends with its key, so the server runs it once", async () => {
    const first = render();
    const second = render({ storage: ownSession() });
    act(() => first.result.current.mutate(tea));
    await settle();
    act(() => second.result.current.mutate(tea));
    await settle();
    expect(sent.map((request) => request.key)).toEqual([first.result.current.key, first.result.current.key]);
    expect(second.result.current.key).toBe(first.result.current.key);

    sent[0]?.answer(200, placed(7));
    sent[1]?.answer(200, placed(7), { "idempotent-replayed": "true" });
    await settle();
    expect(first.result.current).toMatchObject({ isSuccess: true, replayed: false, data: { orderId: 7 } });
    expect(second.result.current).toMatchObject({ isSuccess: true, replayed: true, data: { orderId: 7 } });
  });

  it("never adopts its own abandoned action: after reset(), the same input is a new action with a new key", async () => {
    const { result } = render();
    act(() => result.current.mutate(tea));
    await settle();
    act(() => {
      result.current.reset();
      result.current.mutate(tea);
    });
    await settle();
    expect(sent).toHaveLength(2);
    expect(sent[1]?.key).not.toBe(sent[0]?.key);
    expect(sent[1]?.key).toBe(result.current.key);
  });

  it("after the first tab's action settled, or with another input: each tab's action is its own", async () => {
    const first = render();
    const second = render({ storage: ownSession() });
    act(() => first.result.current.mutate(tea));
    await settle();
    act(() => second.result.current.mutate(mugs));
    await settle();
    sent[0]?.answer(200, placed(1));
    sent[1]?.answer(200, placed(2));
    await settle();
    const third = render({ storage: ownSession() });
    act(() => third.result.current.mutate(tea));
    await settle();
    expect(new Set(sent.map((request) => request.key)).size).toBe(3);
  });

  describe("with Web Locks", () => {
    beforeEach(async () => {
      await thisTab(); // this document's identity, found without locks, as the tests above found it
      Object.defineProperty(navigator, "locks", { configurable: true, value: webLocks() });
    });
    afterEach(() => {
      Reflect.deleteProperty(navigator, "locks");
    });

    /** The first tab presses and its request is on its way; the second tab presses the same cart. */
    async function secondTabPressesWhileFirstSends(options: RenderOptions = {}) {
      const first = render();
      const second = render({ ...options, storage: ownSession() });
      act(() => first.result.current.mutate(tea));
      await settle();
      const pressedAt = Date.now();
      act(() => second.result.current.mutate(tea));
      await settle();
      return { first, second, pressedAt };
    }

    it("the second waits, saying so, and sends with the first's key once the first has its answer", async () => {
      const { first, second, pressedAt } = await secondTabPressesWhileFirstSends();
      expect(sent).toHaveLength(1);
      expect(second.result.current).toMatchObject({ isPending: true, waitingForTabUntil: pressedAt + 10_000 });

      sent[0]?.answer(200, placed(7));
      await settle();
      expect(sent.map((request) => request.key)).toEqual([first.result.current.key, first.result.current.key]);
      expect(second.result.current.waitingForTabUntil).toBeUndefined();
      sent[1]?.answer(200, placed(7), { "idempotent-replayed": "true" });
      await settle();
      expect(second.result.current).toMatchObject({ isSuccess: true, replayed: true, key: first.result.current.key });
    });

    it.each([
      ["10 s by default", undefined, 10_000],
      ["tabWaitMs", 3_000, 3_000],
    ])(
      "the second stops waiting after %s and sends with the first's key, which is still sending",
      async (_, tabWaitMs, boundMs) => {
        const { first, second } = await secondTabPressesWhileFirstSends(tabWaitMs === undefined ? {} : { tabWaitMs });
        await act(() => vi.advanceTimersByTimeAsync(boundMs - 1));
        expect(sent).toHaveLength(1);
        await act(() => vi.advanceTimersByTimeAsync(1));
        expect(sent.map((request) => request.key)).toEqual([first.result.current.key, first.result.current.key]);
        expect(second.result.current).toMatchObject({ isPending: true, waitingForTabUntil: undefined });

        // The server made the two one: the first placed it, the second is answered its replay.
        sent[0]?.answer(200, placed(7));
        sent[1]?.answer(200, placed(7), { "idempotent-replayed": "true" });
        await settle();
        expect(second.result.current).toMatchObject({ isSuccess: true, replayed: true, data: { orderId: 7 } });
      },
    );

    it("a third tab pressing while a tab that stopped waiting still sends (the lock free again) joins its action", async () => {
      const { first } = await secondTabPressesWhileFirstSends();
      await act(() => vi.advanceTimersByTimeAsync(10_000));
      sent[0]?.answer(200, placed(7)); // the first lets go of the lock; the second's request is still out
      await settle();
      const third = render({ storage: ownSession() });
      act(() => third.result.current.mutate(tea));
      await settle();
      expect(sent.map((request) => request.key)).toEqual(Array(3).fill(first.result.current.key));
    });

    it("a form gone while it waits sends nothing", async () => {
      const { second } = await secondTabPressesWhileFirstSends();
      act(() => second.result.current.reset());
      await act(() => vi.advanceTimersByTimeAsync(60_000));
      expect(sent).toHaveLength(1);
    });
  });
});

/**
 * Web Locks as the tabs of one origin share them, as far as the hook uses them: exclusive locks, granted in the
 * order asked, `ifAvailable` and `signal`.
 */
function webLocks(): LockManager {
  const queues = new Map<string, Array<() => void>>();
  const request = async (
    name: string,
    options: LockOptions,
    callback: (lock: Lock | null) => Promise<unknown>,
  ): Promise<unknown> => {
    const queue = queues.get(name);
    if (queue && options.ifAvailable) return callback(null);
    if (queue) {
      await new Promise<void>((granted, refused) => {
        const signal = options.signal;
        const abort = () => {
          queue.splice(queue.indexOf(grant), 1);
          refused(signal?.reason);
        };
        const grant = () => {
          signal?.removeEventListener("abort", abort);
          granted();
        };
        if (signal?.aborted) return refused(signal.reason);
        signal?.addEventListener("abort", abort, { once: true });
        queue.push(grant);
      });
    } else {
      queues.set(name, []);
    }
    try {
      return await callback({ name, mode: "exclusive" });
    } finally {
      const next = queues.get(name)?.shift();
      if (next) next();
      else queues.delete(name);
    }
  };
  return { request, query: async () => ({}) } as unknown as LockManager;
}

describe("a mutation persisted while it waited offline (persistQueryClient)", () => {
  /** What the page persists before it goes away: TanStack Query's own dehydration, through JSON as a storage has it. */
  const persisted = (queryClient: QueryClient) => JSON.parse(JSON.stringify(dehydrate(queryClient)));

  /** A page that pressed for `tea` while offline and was then reloaded (still offline), its cache restored. */
  async function reloadedWithPausedOrder() {
    onlineManager.setOnline(false);
    const before = clientsOfAPage();
    const page = render({ clients: before });
    act(() => page.result.current.mutate(tea));
    await settle();
    expect(page.result.current).toMatchObject({ isPaused: true, isOffline: true });
    const key = page.result.current.key;
    const saved = persisted(before.queryClient);
    expect(saved.mutations).toHaveLength(1);
    page.unmount();

    // The reloaded page: defaults first, then the restore, then the restored mutation resumes.
    const after = clientsOfAPage();
    const trpc = createTRPCOptionsProxy<Router>({ client: after.trpcClient, queryClient: after.queryClient });
    const settled = vi.fn();
    after.queryClient.setMutationDefaults(
      trpc.placeOrder.mutationKey(),
      idempotentMutationDefaults(trpc.placeOrder, { onSettled: settled }),
    );
    hydrate(after.queryClient, saved);
    const reloaded = render({ clients: after });
    await settle();
    const online = async () => {
      act(() => onlineManager.setOnline(true));
      await settle();
      await act(() => after.queryClient.resumePausedMutations());
    };
    return { key, reloaded, settled, online };
  }

  it("resumes after the reload with the key it was started with, through idempotentMutationDefaults", async () => {
    const { key, reloaded, settled, online } = await reloadedWithPausedOrder();
    expect(reloaded.result.current).toMatchObject({ key, isPending: true, isPaused: true, isOffline: true });
    await online();
    expect(sent.map((request) => [request.key, JSON.parse(request.body)])).toEqual([[key, tea]]);

    sent[0]?.answer(200, placed(3));
    await settle();
    expect(reloaded.result.current).toMatchObject({ key, isSuccess: true, data: { orderId: 3 } });
    expect(settled).toHaveBeenCalledTimes(1);
    // Pressed again with the same cart: the same action, replayed by the server, never a second order.
    act(() => reloaded.result.current.mutate(tea));
    await settle();
    expect(sent.map((request) => request.key)).toEqual([key, key]);
  });

  it("is in flight for the form: another input is refused while it waits", async () => {
    const { reloaded } = await reloadedWithPausedOrder();
    await expect(act(() => reloaded.result.current.mutateAsync(mugs))).rejects.toBeInstanceOf(ActionInFlightError);
  });

  it("is abandoned by reset(): it leaves the cache and is never sent", async () => {
    const { reloaded, online } = await reloadedWithPausedOrder();
    act(() => reloaded.result.current.reset());
    await online();
    expect(sent).toEqual([]);
    expect(reloaded.result.current).toMatchObject({ key: undefined, isIdle: true });
  });

  it("retires its key when the server refused it for good, as the form's own action would", async () => {
    const { key, reloaded, online } = await reloadedWithPausedOrder();
    await online();
    sent[0]?.answer(403, refused(403, "Your card was declined"));
    await settle();
    act(() => reloaded.result.current.mutate(tea));
    await settle();
    expect(sent).toHaveLength(2);
    expect(sent[1]?.key).not.toBe(key);
  });

  it("an action abandoned with reset() while paused is not persisted, so no reload sends it", async () => {
    onlineManager.setOnline(false);
    const page = clientsOfAPage();
    const { result } = render({ clients: page });
    act(() => result.current.mutate(tea));
    await settle();
    act(() => result.current.reset());
    act(() => result.current.mutate(mugs));
    await settle();
    const saved = persisted(page.queryClient);
    expect(saved.mutations.map((mutation: { state: { variables: unknown } }) => mutation.state.variables)).toEqual([
      mugs,
    ]);
  });

  it("gives each mutation started from the defaults a key of its own, also two with the same input object", async () => {
    onlineManager.setOnline(false);
    const page = clientsOfAPage();
    const trpc = createTRPCOptionsProxy<Router>({ client: page.trpcClient, queryClient: page.queryClient });
    page.queryClient.setMutationDefaults(trpc.placeOrder.mutationKey(), idempotentMutationDefaults(trpc.placeOrder));
    const mutationKey = trpc.placeOrder.mutationKey();
    const order = () => new MutationObserver<unknown, Error, typeof tea>(page.queryClient, { mutationKey });
    for (const observer of [order(), order()]) observer.mutate(tea).catch(() => {});
    await settle();
    act(() => {
      onlineManager.setOnline(true);
      page.queryClient.resumePausedMutations();
    });
    await settle();
    expect(sent).toHaveLength(2);
    expect(new Set(sent.map((request) => request.key)).size).toBe(2);
  });

  it("keeps the app's own onMutate result for its callbacks and its state, beside the key", async () => {
    const seen = vi.fn();
    const { result } = render({ onMutate: () => ({ optimistic: "tea" }), onSuccess: (_d, _i, own) => seen(own) });
    act(() => result.current.mutate(tea));
    await settle();
    sent[0]?.answer(200, placed(1));
    await settle();
    expect(seen).toHaveBeenCalledWith({ optimistic: "tea" });
    expect(result.current.context).toEqual({ optimistic: "tea" });
  });
});
