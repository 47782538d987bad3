// @vitest-environment jsdom
/**
 * The hook on tRPC's classic React integration (`createTRPCReact`, as create-t3-app generates it), with the real
 * idempotencyLink and tRPC client and `fetch` answered by the test: one key per user action across presses in one
 * task, the link's retries and a reload, and the choice of what a press after a success is.
 */
import { idempotencyLink } from "@idemkit/trpc/client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, renderHook } from "@testing-library/react";
import { createTRPCReact } from "@trpc/react-query";
import { initTRPC } from "@trpc/server";
import { createElement, type ReactNode } from "react";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { useIdempotentMutation } from "../src/classic.js";

const t = initTRPC.create();
const router = t.router({
  post: t.router({
    create: t.procedure.input((input) => input as { name: string }).mutation(({ input }) => ({ name: input.name })),
  }),
});
const api = createTRPCReact<typeof router>();

interface Sent {
  key: string | null;
  url: string;
  answer(status: number, body: unknown): void;
}
let sent: Sent[];
const fakeFetch = (url: unknown, init?: { headers?: unknown }) =>
  new Promise<Response>((resolve) => {
    sent.push({
      key: new Headers(init?.headers as HeadersInit | undefined).get("idempotency-key"),
      url: String(url),
      answer: (status, body) =>
        resolve(new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })),
    });
  });

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });
  sent = [];
  sessionStorage.clear();
});
afterEach(() => {
  cleanup();
  vi.useRealTimers();
});

function render(options: Parameters<typeof useIdempotentMutation<typeof api.post.create>>[1] = {}) {
  const queryClient = new QueryClient();
  const trpcClient = api.createClient({
    links: [idempotencyLink({ url: "http://blog.test/api/trpc", fetch: fakeFetch, retry: { maxAttempts: 3 } })],
  });
  const wrapper = ({ children }: { children: ReactNode }) =>
    createElement(api.Provider, {
      client: trpcClient,
      queryClient,
      // biome-ignore lint/correctness/noChildrenProp: the Provider's props type requires children among them
      children: createElement(QueryClientProvider, { client: queryClient }, children),
    });
  return renderHook(() => useIdempotentMutation(api.post.create, options), { wrapper });
}

const settle = () => act(() => vi.advanceTimersByTimeAsync(0));
const created = (name: string) => ({ result: { data: { name } } });
const busy = { error: { message: "busy", code: -32603, data: { code: "INTERNAL_SERVER_ERROR", httpStatus: 503 } } };

it("sends two presses in one task as one action, to the procedure's path, and retries it with its key", async () => {
  const { result } = render();
  act(() => {
    result.current.mutate({ name: "hello" });
    result.current.mutate({ name: "hello" });
  });
  await settle();
  expect(sent).toHaveLength(1);
  expect(sent[0]?.url).toContain("/api/trpc/post.create");
  expect(sent[0]?.key).toMatch(/^[0-9a-f-]{36}$/);
  sent[0]?.answer(503, busy);
  await act(() => vi.advanceTimersByTimeAsync(30_000));
  expect(sent).toHaveLength(2);
  expect(sent[1]?.key).toBe(sent[0]?.key);
  sent[1]?.answer(200, created("hello"));
  await settle();
  expect(result.current).toMatchObject({ isSuccess: true, data: { name: "hello" }, key: sent[0]?.key, attempt: 2 });
  // The procedure's own types come through: its output, and its input (checked by the compiler).
  const name: string | undefined = result.current.data?.name;
  expect(name).toBe("hello");
  // @ts-expect-error the input is { name: string }
  if (name === undefined) result.current.mutate({ title: 1 });
});

it("resumes after a reload mid-request with the same key", async () => {
  const first = render();
  act(() => first.result.current.mutate({ name: "hello" }));
  await settle();
  first.unmount();
  const reloaded = render();
  await settle();
  act(() => reloaded.result.current.mutate({ name: "hello" }));
  await settle();
  expect(sent.map((request) => request.key)).toEqual([sent[0]?.key, sent[0]?.key]);
});

it("makes a press after a success a new post with afterSuccess: new-action, and a replay by default", async () => {
  for (const [options, sameKey] of [
    [{}, true],
    [{ afterSuccess: "new-action" as const }, false],
  ] as const) {
    sent = [];
    sessionStorage.clear();
    const form = render(options);
    act(() => form.result.current.mutate({ name: "hello" }));
    await settle();
    sent[0]?.answer(200, created("hello"));
    await settle();
    act(() => form.result.current.mutate({ name: "hello" }));
    await settle();
    expect(sent[1]?.key === sent[0]?.key).toBe(sameKey);
    form.unmount();
  }
});

it("says where it must be used, outside api.Provider", () => {
  const quiet = vi.spyOn(console, "error").mockImplementation(() => {});
  try {
    expect(() => renderHook(() => useIdempotentMutation(api.post.create))).toThrow(/api\.Provider/);
  } finally {
    quiet.mockRestore();
  }
});
