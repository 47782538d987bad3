/**
 * Abuse limits per scope: calls running at once and new keys per window, refused RATE_LIMITED (429 with
 * Retry-After through the Fetch adapter) before anything runs; retries and duplicates of one action never count
 * twice; other scopes are not touched. On an injected clock.
 */
import { describe, expect, it, vi } from "vitest";
import type { CallLimits } from "./engine/limits.js";
import type { IdempotencyEngineOptions, Settlement } from "./engine/types.js";
import { createIdempotencyEngine } from "./engine.js";
import { isIdempotencyError } from "./errors.js";
import { withIdempotency } from "./fetch.js";
import { memoryStore } from "./memory-store.js";
import { lookUpOutcome } from "./outcome.js";

function limited(limits: CallLimits) {
  let nowMs = Date.UTC(2026, 11, 1);
  let runs = 0;
  const engine = createIdempotencyEngine({ store: memoryStore(), limits, now: () => nowMs, replayCacheSize: 0 });
  const call = (scope: string, key: string, held?: Promise<void>) =>
    engine.run({ scope, path: "orders.place", key, fingerprint: "f" }, async (): Promise<Settlement<number>> => {
      runs++;
      await held;
      return { value: runs, response: { status: 200, body: String(runs) } };
    });
  return { call, runs: () => runs, advance: (ms: number) => (nowMs += ms) };
}

/** One call at a time for alice in lease mode, answered at 5 s: `call(key, work)` runs `work` under `key`. */
function leaseLimited(options: Partial<IdempotencyEngineOptions<never>>) {
  const engine = createIdempotencyEngine({
    store: memoryStore(),
    mode: "lease",
    procedureTimeoutMs: 5_000,
    limits: { inFlightPerScope: 1 },
    ...options,
  });
  return (key: string, work: () => Promise<void>) =>
    engine.run({ scope: "alice", path: "orders.place", key, fingerprint: "f" }, async () => {
      await work();
      return { value: key, response: { status: 200, body: JSON.stringify(key) } };
    });
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => (isIdempotencyError(error) ? { code: error.code, retryAfterMs: error.retryAfterMs } : error),
  );

describe("limits", () => {
  it("refuses a scope's call past inFlightPerScope while others run, but not a duplicate of one running", async () => {
    const shop = limited({ inFlightPerScope: 1 });
    let finish!: () => void;
    const first = shop.call("alice", "a", new Promise<void>((resolve) => (finish = resolve)));
    await Promise.resolve();
    expect(await refusal(shop.call("alice", "b"))).toEqual({ code: "RATE_LIMITED", retryAfterMs: 1_000 });
    // The same action again is the running one's, as it would be without limits.
    expect(await refusal(shop.call("alice", "a"))).toMatchObject({ code: "IN_PROGRESS" });
    expect(await shop.call("bob", "b")).toMatchObject({ replayed: false });
    finish();
    await first;
    expect(await shop.call("alice", "b")).toMatchObject({ replayed: false });
    expect(shop.runs()).toBe(3);
  });

  it("keeps a lease-mode call answered at procedureTimeoutMs in its place until its work is done", async () => {
    vi.useFakeTimers();
    try {
      const call = leaseLimited({});
      let finish!: () => void;
      const slow = refusal(call("a", () => new Promise<void>((resolve) => (finish = resolve))));
      await vi.advanceTimersByTimeAsync(5_000);
      expect(await slow).toMatchObject({ code: "IN_PROGRESS" });
      // Its client was answered, but the charge may still be on its way: it still runs, so it still counts.
      expect(await refusal(call("b", async () => {}))).toMatchObject({ code: "RATE_LIMITED" });
      finish();
      await vi.advanceTimersByTimeAsync(0);
      expect(await call("b", async () => {})).toEqual({ replayed: false, value: "b" });
    } finally {
      vi.useRealTimers();
    }
  });

  it("lets a lease-mode call that never settles go once its hold ends, as the key is let go", async () => {
    vi.useFakeTimers();
    try {
      const call = leaseLimited({ leaseMs: 3_000, maxHoldMs: 10_000 });
      const hung = refusal(call("a", () => new Promise<void>(() => {})));
      await vi.advanceTimersByTimeAsync(5_000);
      expect(await hung).toMatchObject({ code: "IN_PROGRESS" });
      expect(await refusal(call("b", async () => {}))).toMatchObject({ code: "RATE_LIMITED" });
      // Past maxHoldMs its lease is no longer renewed; once it ends, the key may be taken over, and so is its place.
      await vi.advanceTimersByTimeAsync(10_000);
      expect(await call("b", async () => {})).toEqual({ replayed: false, value: "b" });
    } finally {
      vi.useRealTimers();
    }
  });

  it("refuses a scope's new key past newKeysPerScope in the window, never a key it already sent, until the window moves", async () => {
    const shop = limited({ newKeysPerScope: { max: 2, windowMs: 60_000 } });
    await shop.call("alice", "a");
    shop.advance(10_000);
    await shop.call("alice", "b");
    expect(await refusal(shop.call("alice", "c"))).toEqual({ code: "RATE_LIMITED", retryAfterMs: 50_000 });
    expect(await shop.call("alice", "a")).toMatchObject({ replayed: true });
    expect(await shop.call("bob", "c")).toMatchObject({ replayed: false });
    shop.advance(50_000);
    expect(await shop.call("alice", "c")).toMatchObject({ replayed: false });
    expect(shop.runs()).toBe(4);
  });

  it("is answered 429 with Retry-After through the Fetch adapter, and the handler does not run", async () => {
    let runs = 0;
    const handler = withIdempotency(
      async () => {
        runs++;
        return Response.json({ ok: true });
      },
      { store: memoryStore(), scope: () => "carol", limits: { newKeysPerScope: { max: 1, windowMs: 60_000 } } },
    );
    const post = (key: string) =>
      handler(
        new Request("http://shop.test/orders", { method: "POST", headers: { "idempotency-key": key }, body: "{}" }),
      );
    expect((await post("k1")).status).toBe(200);
    const refused = await post("k2");
    expect([refused.status, refused.headers.get("retry-after")]).toEqual([429, "60"]);
    expect(await refused.json()).toMatchObject({ error: { code: "RATE_LIMITED", retryable: true } });
    expect(runs).toBe(1);
  });

  it("counts one key on two paths as two actions, as their records are", async () => {
    let runs = 0;
    const engine = createIdempotencyEngine({
      store: memoryStore(),
      limits: { newKeysPerScope: { max: 1, windowMs: 60_000 } },
    });
    const call = (path: string) =>
      engine.run({ scope: "dave", path, key: "k", fingerprint: "f" }, async () => {
        runs++;
        return { value: runs, response: { status: 200, body: "1" } };
      });
    await call("orders.place");
    expect(await refusal(call("refunds.issue"))).toMatchObject({ code: "RATE_LIMITED" });
    expect(runs).toBe(1);
  });

  it("counts a scope once in the process: the same limits on two endpoints share its calls running", async () => {
    const limits = { inFlightPerScope: 1 };
    let finish!: () => void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    const clock = () => Date.UTC(2026, 11, 4);
    const endpoint = (path: string) => {
      const engine = createIdempotencyEngine({ store: memoryStore(), limits, now: clock });
      return (key: string, work?: Promise<void>) =>
        engine.run({ scope: "erin", path, key, fingerprint: "f" }, async () => {
          await work;
          return { value: key, response: { status: 200, body: JSON.stringify(key) } };
        });
    };
    const [checkout, refund] = [endpoint("checkout.place"), endpoint("refunds.issue")];
    const first = checkout("a", held);
    await Promise.resolve();
    expect(await refusal(refund("b"))).toEqual({ code: "RATE_LIMITED", retryAfterMs: 1_000 });
    // Other limits are another count.
    const other = createIdempotencyEngine({ store: memoryStore(), limits: { inFlightPerScope: 2 }, now: clock });
    await expect(
      other.run({ scope: "erin", path: "refunds.issue", key: "b", fingerprint: "f" }, async () => ({
        value: 1,
        response: { status: 200, body: "1" },
      })),
    ).resolves.toMatchObject({ replayed: false });
    finish();
    await first;
    expect(await refund("b")).toEqual({ replayed: false, value: "b" });
  });

  it("counts a lookup as a call: a key never sent is a new one, and one sent before is not", async () => {
    const limits = { newKeysPerScope: { max: 1, windowMs: 60_000 } };
    const now = () => Date.UTC(2026, 11, 4);
    const store = memoryStore();
    const engine = createIdempotencyEngine({ store, limits, now });
    const id = { scope: "frank", path: "orders.place", key: "sent" };
    await engine.run({ ...id, fingerprint: "f" }, async () => ({ value: 1, response: { status: 200, body: "1" } }));
    expect(await lookUpOutcome(store, id, { now, limits })).toMatchObject({ state: "stored" });
    expect(await refusal(lookUpOutcome(store, { ...id, key: "guessed" }, { now, limits }))).toMatchObject({
      code: "RATE_LIMITED",
    });
  });

  it("refuses limits that are not whole numbers, or a window without its max", () => {
    expect(() => createIdempotencyEngine({ store: memoryStore(), limits: { inFlightPerScope: 0 } })).toThrow(
      /inFlightPerScope must be a whole number/,
    );
    const halfWindow = { newKeysPerScope: { max: 5 } } as unknown as CallLimits;
    expect(() => createIdempotencyEngine({ store: memoryStore(), limits: halfWindow })).toThrow(
      /both max and windowMs/,
    );
  });
});
