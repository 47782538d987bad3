import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { IdempotencyEvent, Settlement } from "./engine/types.js";
import { createIdempotencyEngine, type IdempotencyEngine } from "./engine.js";
import { IdempotencyErrorCode, isIdempotencyError } from "./errors.js";
import { memoryStore } from "./memory-store.js";
import type { IdempotencyStore, StoredRecord } from "./store.js";

const request = { scope: "alice", path: "orders.place", key: "k-1", fingerprint: "fp-1" };
const ok = (body: string) => async () => ({ value: body, response: { status: 200, body } });

function setup(store: IdempotencyStore = memoryStore()) {
  let now = Date.UTC(2026, 0, 1);
  const events: IdempotencyEvent[] = [];
  const engine = createIdempotencyEngine({
    store,
    ttlMs: 10_000,
    leaseMs: 1_000,
    now: () => now,
    onEvent: (event) => events.push(event),
  });
  return { engine, events, store, advance: (ms: number) => (now += ms), types: () => events.map((e) => e.type) };
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return isIdempotencyError(error) ? error.code : String(error);
  }
}

describe("the engine in lease mode", () => {
  it("runs once, then replays the stored response until the TTL ends", async () => {
    const { engine, advance, types } = setup();
    expect(await engine.run(request, ok('"first"'))).toEqual({ replayed: false, value: '"first"' });
    advance(9_999);
    expect(await engine.run(request, ok('"second"'))).toEqual({
      replayed: true,
      response: { status: 200, body: '"first"' },
    });
    advance(1);
    expect(await engine.run(request, ok('"third"'))).toEqual({ replayed: false, value: '"third"' });
    expect(types()).toEqual(["executed", "replayed", "executed"]);
  });

  it("refuses another fingerprint under the same key, from the cache and from the store alike", async () => {
    const { engine, store } = setup();
    await engine.run(request, ok("1"));
    expect(await codeOf(engine.run({ ...request, fingerprint: "fp-2" }, ok("2")))).toBe("FINGERPRINT_MISMATCH");
    const cold = createIdempotencyEngine({ store, replayCacheSize: 0, now: () => Date.UTC(2026, 0, 1) });
    expect(await codeOf(cold.run({ ...request, fingerprint: "fp-2" }, ok("2")))).toBe("FINGERPRINT_MISMATCH");
  });

  it("answers IN_PROGRESS with the remaining lease while the first run is still going", async () => {
    const { engine, advance } = setup();
    let finish!: () => void;
    const first = engine.run(
      request,
      () =>
        new Promise<Settlement<unknown>>(
          (resolve) => (finish = () => resolve({ value: 1, response: { status: 200, body: "1" } })),
        ),
    );
    await Promise.resolve();
    advance(400);
    try {
      await engine.run(request, ok("2"));
      expect.unreachable();
    } catch (error) {
      expect(isIdempotencyError(error) && error.code).toBe(IdempotencyErrorCode.IN_PROGRESS);
      expect(isIdempotencyError(error) && error.retryAfterMs).toBe(600);
    }
    finish();
    await first;
  });

  it("releases the key when the work throws or declines to store, so the retry runs", async () => {
    const { engine, types } = setup();
    await expect(engine.run(request, async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await engine.run(request, async () => ({ value: "5xx", response: undefined }))).toEqual({
      replayed: false,
      value: "5xx",
    });
    expect(await engine.run(request, ok("3"))).toEqual({ replayed: false, value: "3" });
    expect(types()).toEqual(["released", "released", "executed"]);
  });

  it("takes over after the lease ends, and the overtaken run's result is discarded (LEASE_LOST)", async () => {
    const { engine, advance, types } = setup();
    let finishSlow!: () => void;
    const slow = engine.run(
      request,
      () =>
        new Promise<Settlement<unknown>>(
          (resolve) => (finishSlow = () => resolve({ value: "slow", response: { status: 200, body: '"slow"' } })),
        ),
    );
    await Promise.resolve();
    advance(1_000);
    expect(await engine.run(request, ok('"fast"'))).toEqual({ replayed: false, value: '"fast"' });
    finishSlow();
    expect(await codeOf(slow)).toBe("LEASE_LOST");
    expect(await engine.run(request, ok('"again"'))).toMatchObject({ replayed: true, response: { body: '"fast"' } });
    expect(types()).toEqual(["takeover", "executed", "lease_lost", "replayed"]);
  });

  it("refuses with STORE_UNAVAILABLE, without running the work, when the store fails", async () => {
    const broken: IdempotencyStore = {
      ...memoryStore(),
      claim: () => Promise.reject(new Error("connection refused")),
    };
    const { engine, types } = setup(broken);
    let ran = false;
    const outcome = engine.run(request, async () => {
      ran = true;
      return { value: 1, response: { status: 200, body: "1" } };
    });
    expect(await codeOf(outcome)).toBe("STORE_UNAVAILABLE");
    expect(ran).toBe(false);
    expect(types()).toEqual(["store_error"]);
  });

  it("replays from memory without touching the store, keeping at most replayCacheSize records", async () => {
    const inner = memoryStore();
    let claims = 0;
    const counting: IdempotencyStore = {
      ...inner,
      claim: (claim) => {
        claims++;
        return inner.claim(claim);
      },
    };
    const engine = createIdempotencyEngine({ store: counting, replayCacheSize: 1 });
    const other = { ...request, key: "k-2" };
    await engine.run(request, ok("a"));
    await engine.run(other, ok("b"));
    expect(claims).toBe(2);
    expect(await engine.run(other, ok("x"))).toMatchObject({ replayed: true });
    expect(claims).toBe(2);
    expect(await engine.run(request, ok("x"))).toMatchObject({ replayed: true, response: { body: "a" } });
    expect(claims).toBe(3);
    expect(await engine.run({ ...request, scope: "bob" }, ok("b"))).toEqual({ replayed: false, value: "b" });
  });

  it("refuses atomic mode on a store without transactions", () => {
    expect(() => createIdempotencyEngine({ store: memoryStore(), mode: "atomic" })).toThrow(/lease/);
  });
});

describe("the engine keeping a running lease", () => {
  const T0 = Date.UTC(2026, 0, 1);
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function engineOver(store: IdempotencyStore, options: { maxHoldMs?: number } = {}) {
    const events: IdempotencyEvent[] = [];
    const engine = createIdempotencyEngine({
      store,
      leaseMs: 1_000,
      replayCacheSize: 0,
      now: Date.now,
      onEvent: (event) => events.push(event),
      ...options,
    });
    return { engine, types: () => events.map((event) => event.type) };
  }

  /** A run whose work waits for `finish()`, recording the signal it was given. */
  function slowRun<Tx>(engine: IdempotencyEngine<Tx>) {
    let finish!: () => void;
    let signal!: AbortSignal;
    const done = engine.run(request, ({ signal: given }) => {
      signal = given;
      return new Promise<Settlement<string>>((resolve) => {
        finish = () => resolve({ value: "slow", response: { status: 200, body: '"slow"' } });
      });
    });
    return { done, finish: () => finish(), signal: () => signal };
  }

  it("renews the lease of a call slower than leaseMs: a duplicate meanwhile is a conflict, never a takeover", async () => {
    const { engine, types } = engineOver(memoryStore());
    const first = slowRun(engine);
    await vi.advanceTimersByTimeAsync(3_500);
    expect(await codeOf(engine.run(request, ok('"again"')))).toBe("IN_PROGRESS");
    expect(first.signal().aborted).toBe(false);
    first.finish();
    expect(await first.done).toEqual({ replayed: false, value: "slow" });
    expect(await engine.run(request, ok('"again"'))).toMatchObject({ replayed: true });
    expect(types()).toEqual(["conflict", "executed", "replayed"]);
  });

  it("lets a hung call go after maxHoldMs: its signal aborts when the lease runs out, and a retry takes over", async () => {
    const { engine, types } = engineOver(memoryStore(), { maxHoldMs: 2_000 });
    const hung = slowRun(engine);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(hung.signal().aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(hung.signal().aborted).toBe(true);
    expect(await engine.run(request, ok('"retry"'))).toEqual({ replayed: false, value: '"retry"' });
    hung.finish();
    expect(await codeOf(hung.done)).toBe("LEASE_LOST");
    expect(types()).toEqual(["takeover", "executed", "lease_lost"]);
  });

  it("aborts the signal as soon as a renewal finds the key taken over", async () => {
    const { engine } = engineOver({ ...memoryStore(), renew: async () => false });
    const run = slowRun(engine);
    await vi.advanceTimersByTimeAsync(400);
    expect(run.signal().aborted).toBe(true);
    expect(String(run.signal().reason)).toMatch(/another request took the key over/);
    run.finish();
    // The memory store still holds this call's fence (only renew() said otherwise), so its result lands.
    expect(await run.done).toEqual({ replayed: false, value: "slow" });
  });

  it("aborts the signal when the lease runs out while renewals fail or never answer", async () => {
    for (const renew of [() => Promise.reject(new Error("connection reset")), () => new Promise<boolean>(() => {})]) {
      const { engine } = engineOver({ ...memoryStore(), renew });
      const run = slowRun(engine);
      await vi.advanceTimersByTimeAsync(999);
      expect(run.signal().aborted).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(run.signal().aborted).toBe(true);
      run.finish();
      await run.done;
    }
  });

  it("keeps the lease of a live call whose first renewal never answers: the next one goes out before the lease ends", async () => {
    const store = memoryStore();
    let renewals = 0;
    const firstHangs: IdempotencyStore = {
      ...store,
      renew: (...args) => (++renewals === 1 ? new Promise<boolean>(() => {}) : store.renew(...args)),
    };
    const { engine, types } = engineOver(firstHangs);
    const first = slowRun(engine);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(first.signal().aborted).toBe(false);
    expect(await codeOf(engine.run(request, ok('"duplicate"')))).toBe("IN_PROGRESS");
    first.finish();
    expect(await first.done).toEqual({ replayed: false, value: "slow" });
    expect(renewals).toBeGreaterThan(2);
    expect(types()).toEqual(["conflict", "executed"]);
  });

  it("bounds each renewal by storeTimeoutMs, and takes a late answer that says the key was taken over", async () => {
    const store = memoryStore();
    const answers: Array<(held: boolean) => void> = [];
    const slow: IdempotencyStore = { ...store, renew: () => new Promise<boolean>((resolve) => answers.push(resolve)) };
    const events: IdempotencyEvent[] = [];
    const engine = createIdempotencyEngine({
      store: slow,
      leaseMs: 60_000,
      storeTimeoutMs: 100,
      now: Date.now,
      onEvent: (event) => events.push(event),
    });
    const run = slowRun(engine);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(answers).toHaveLength(1);
    // Its bound passed: the next renewal goes out a quarter of the cadence later, without waiting for this one.
    await vi.advanceTimersByTimeAsync(100 + 5_000);
    expect(answers).toHaveLength(2);
    expect(run.signal().aborted).toBe(false);
    answers[0]?.(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(String(run.signal().reason)).toMatch(/another request took the key over/);
    run.finish();
    await run.done;
  });

  it("answers a call past procedureTimeoutMs IN_PROGRESS, aborts its signal, and keeps its key until it settles", async () => {
    const events: IdempotencyEvent[] = [];
    const engine = createIdempotencyEngine({
      store: memoryStore(),
      leaseMs: 1_000,
      procedureTimeoutMs: 5_000,
      replayCacheSize: 0,
      now: Date.now,
      onEvent: (event) => events.push(event),
    });
    const hung = slowRun(engine);
    const answered = codeOf(hung.done);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(hung.signal().aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await answered).toBe("IN_PROGRESS");
    expect((hung.signal().reason as Error).name).toBe("TimeoutError");
    // Its lease is still renewed while the work goes on: a retry long after is not a takeover.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await codeOf(engine.run(request, ok('"retry"')))).toBe("IN_PROGRESS");
    hung.finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(await engine.run(request, ok('"retry"'))).toEqual({
      replayed: true,
      response: { status: 200, body: '"slow"' },
    });
    expect(events.map((event) => event.type)).toEqual(["timed_out", "conflict", "executed", "replayed"]);
  });

  it("releases a call that stops on its timeout's signal once it has stopped, never while it still runs", async () => {
    const events: IdempotencyEvent[] = [];
    const settling: Array<Promise<unknown>> = [];
    const engine = createIdempotencyEngine({
      store: memoryStore(),
      leaseMs: 1_000,
      procedureTimeoutMs: 5_000,
      replayCacheSize: 0,
      now: Date.now,
      waitUntil: (work) => settling.push(work),
      onEvent: (event) => events.push(event),
    });
    let runs = 0;
    let stopped!: () => void;
    const stopsOnSignal = ({ signal }: { signal: AbortSignal }) => {
      runs++;
      return new Promise<Settlement<string>>((_, reject) => {
        // It takes a while to stop (a provider call winding down): until then the key is still its own.
        signal.addEventListener("abort", () => {
          stopped = () => reject(signal.reason);
        });
      });
    };
    const first = codeOf(engine.run(request, stopsOnSignal));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await first).toBe("IN_PROGRESS");
    expect(settling).toHaveLength(1);
    expect(await codeOf(engine.run(request, ok('"retry"')))).toBe("IN_PROGRESS");
    stopped();
    await settling[0];
    expect(await engine.run(request, ok('"retry"'))).toEqual({ replayed: false, value: '"retry"' });
    expect(runs).toBe(1);
    expect(events.map((event) => event.type)).toEqual(["timed_out", "conflict", "released", "executed"]);
  });

  it("counts a completion whose answer was lost but which landed, instead of calling the lease lost", async () => {
    const store = memoryStore();
    let calls = 0;
    const lostAnswer: IdempotencyStore = {
      ...store,
      complete: async (...args) => {
        const stored = await store.complete(...args);
        if (++calls === 1) throw new Error("connection reset after the update");
        return stored;
      },
    };
    const { engine, types } = engineOver(lostAnswer);
    const outcome = engine.run(request, ok('"paid"'));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await outcome).toEqual({ replayed: false, value: '"paid"' });
    expect(types()).toEqual(["executed"]);
  });

  it("tries again to store a result the store failed to take, and never answers 'not run' for work that ran", async () => {
    const store = memoryStore();
    let failed = 0;
    const flaky: IdempotencyStore = {
      ...store,
      complete: (...args) => (failed++ < 2 ? Promise.reject(new Error("connection reset")) : store.complete(...args)),
    };
    const { engine, types } = engineOver(flaky);
    const outcome = codeOf(engine.run(request, ok('"paid"')));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await outcome).toBeUndefined();
    expect(types()).toEqual(["executed"]);
  });

  it("answers RAN_UNRECORDED when the store keeps failing, then stores the answer while it holds the lease: the resend replays", async () => {
    const store = memoryStore();
    let failures = 3;
    const flaky: IdempotencyStore = {
      ...store,
      complete: (...args) => (failures-- > 0 ? Promise.reject(new Error("connection reset")) : store.complete(...args)),
    };
    const { engine, types } = engineOver(flaky);
    let charges = 0;
    const charge = async () => {
      charges++;
      return { value: '"paid"', response: { status: 200, body: '"paid"' } };
    };
    const first = engine.run(request, charge).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(600);
    const answer = await first;
    expect(answer).toMatchObject({ code: "RAN_UNRECORDED", retryable: false, resend: "check" });
    // The call still holds its key while its answer is being stored: a resend is told to come back.
    expect(await codeOf(engine.run(request, charge))).toBe("IN_PROGRESS");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await engine.run(request, charge)).toMatchObject({ replayed: true, response: { body: '"paid"' } });
    expect(charges).toBe(1);
    expect(types()).toEqual(["ran_unrecorded", "conflict", "executed", "replayed"]);
  });

  it("lets the key go only when its lease ends with the answer still unrecorded", async () => {
    const store = memoryStore();
    const down: IdempotencyStore = {
      ...store,
      complete: () => Promise.reject(new Error("connection reset")),
      renew: () => Promise.reject(new Error("connection reset")),
    };
    const { engine, types } = engineOver(down);
    let runs = 0;
    const charge = async () => {
      runs++;
      return { value: '"paid"', response: { status: 200, body: '"paid"' } };
    };
    const first = engine.run(request, charge).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(600);
    expect(await first).toMatchObject({ code: "RAN_UNRECORDED" });
    await vi.advanceTimersByTimeAsync(1_000);
    // Past the lease (1 s here) nothing is running: the background attempts stopped, said so, and left no timer.
    expect(vi.getTimerCount()).toBe(0);
    expect(types()).toEqual(["ran_unrecorded", "lease_lost"]);
    // And the key is free: the next call with it runs (what subKey downstream is for).
    const again = engine.run(request, charge).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(600);
    await again;
    expect(runs).toBe(2);
    await vi.advanceTimersByTimeAsync(1_000);
  });
});

describe("the engine bounding its waits on the store", () => {
  const T0 = Date.UTC(2026, 0, 1);
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    // Every limit is a timer: none may outlive the request it bounded.
    expect(vi.getTimerCount()).toBe(0);
    vi.useRealTimers();
  });

  /** A promise the test settles by hand: a connection, a claim or a commit that takes as long as the test says. */
  function gate<T = void>() {
    let open!: (value: T) => void;
    const opened = new Promise<T>((resolve) => {
      open = resolve;
    });
    return { opened, open };
  }

  /**
   * An atomic store whose every step waits for the test: the connection (`connection`), the claim's answer
   * (`claimed`) and the commit (`committed`). It records what happened inside the transaction.
   */
  function stalledAtomicStore() {
    const connection = gate();
    const claimed = gate<{ status: "claimed"; fence: number; takeover: false }>();
    const committed = gate();
    const log: string[] = [];
    /** What each claim was allowed to wait for a running duplicate. */
    const waits: Array<number | undefined> = [];
    const store: IdempotencyStore<string> = {
      ...(memoryStore() as IdempotencyStore<never>),
      atomic: {
        waitMs: 500,
        async transaction(work) {
          await connection.opened;
          log.push("begin");
          try {
            const value = await work({
              tx: "tx",
              claim: async (claim) => {
                log.push("claim");
                waits.push(claim.waitMs);
                return claimed.opened;
              },
              complete: async () => {
                log.push("complete");
              },
            });
            await committed.opened;
            log.push("commit");
            return value;
          } catch (error) {
            log.push("rollback");
            throw error;
          }
        },
      },
    };
    return { store, connection, claimed, committed, log, waits };
  }

  function engineOver(store: IdempotencyStore<string>) {
    const events: IdempotencyEvent[] = [];
    const engine = createIdempotencyEngine({
      store,
      replayCacheSize: 0,
      storeTimeoutMs: 2_000,
      transactionTimeoutMs: 10_000,
      now: Date.now,
      onEvent: (event) => events.push(event),
    });
    return { engine, types: () => events.map((event) => event.type) };
  }

  /** The refusal a run ends with, and when, in ms after T0. */
  async function refusal(outcome: Promise<unknown>) {
    try {
      await outcome;
    } catch (error) {
      if (!isIdempotencyError(error)) throw error;
      return { code: error.code, retryAfterMs: error.retryAfterMs, at: Date.now() - T0, message: error.message };
    }
    throw new Error("the run was not refused");
  }

  it("answers 503 once waitMs passed without a connection, and never claims or runs when one comes later", async () => {
    const { store, connection, log } = stalledAtomicStore();
    const { engine, types } = engineOver(store);
    let ran = false;
    const outcome = refusal(
      engine.run(request, async () => {
        ran = true;
        return { value: 1, response: { status: 200, body: "1" } };
      }),
    );
    await vi.advanceTimersByTimeAsync(500);
    expect(await outcome).toMatchObject({ code: "STORE_UNAVAILABLE", retryAfterMs: 1_000, at: 500 });
    expect((await outcome).message).toMatch(/No database connection was free within 500 ms/);
    connection.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(log).toEqual(["begin", "rollback"]);
    expect(ran).toBe(false);
    expect(types()).toEqual(["store_error"]);
  });

  it("spends only what is left of waitMs on the claim, and answers 503 when the claim itself never answers", async () => {
    const { store, connection, log, waits } = stalledAtomicStore();
    const { engine } = engineOver(store);
    const outcome = refusal(engine.run(request, ok("1")));
    await vi.advanceTimersByTimeAsync(300);
    connection.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(waits).toEqual([200]);
    await vi.advanceTimersByTimeAsync(200 + 2_000);
    expect(await outcome).toMatchObject({ code: "STORE_UNAVAILABLE", at: 2_500 });
    expect(log).toEqual(["begin", "claim", "rollback"]);
  });

  it("rolls back a transaction held past transactionTimeoutMs and answers 503, without storing its result", async () => {
    const { store, connection, claimed, log } = stalledAtomicStore();
    const { engine, types } = engineOver(store);
    const work = gate<Settlement<string>>();
    const outcome = refusal(engine.run(request, () => work.opened));
    connection.open();
    claimed.open({ status: "claimed", fence: 1, takeover: false });
    await vi.advanceTimersByTimeAsync(10_000);
    const answered = await outcome;
    expect(answered).toMatchObject({ code: "STORE_UNAVAILABLE", at: 10_000 });
    expect(answered.message).toMatch(/open for more than 10000 ms and was rolled back/);
    expect(log).toEqual(["begin", "claim", "rollback"]);
    work.open({ value: "late", response: { status: 200, body: '"late"' } });
    await vi.advanceTimersByTimeAsync(0);
    expect(log).toEqual(["begin", "claim", "rollback"]);
    expect(types()).toEqual(["store_error"]);
  });

  it("answers 503 'outcome unknown' when the commit is not confirmed within storeTimeoutMs", async () => {
    const { store, connection, claimed, log } = stalledAtomicStore();
    const { engine } = engineOver(store);
    const outcome = refusal(engine.run(request, ok("1")));
    connection.open();
    claimed.open({ status: "claimed", fence: 1, takeover: false });
    await vi.advanceTimersByTimeAsync(2_000);
    const answered = await outcome;
    expect(answered).toMatchObject({ code: "OUTCOME_UNKNOWN", at: 2_000 });
    expect(answered.message).toMatch(/outcome is unknown; retry with the same key/);
    expect(log).toEqual(["begin", "claim", "complete"]);
  });

  it("answers at once when the driver gives the transaction up mid-procedure, and arms nothing after that", async () => {
    const events: IdempotencyEvent[] = [];
    const work = gate<Settlement<string>>();
    let giveUp!: (error: Error) => void;
    const store: IdempotencyStore<string> = {
      ...(memoryStore() as IdempotencyStore<never>),
      atomic: {
        transaction: (run) =>
          new Promise((resolve, reject) => {
            giveUp = reject;
            run({
              tx: "tx",
              claim: async () => ({ status: "claimed", fence: 1, takeover: false }),
              complete: async () => {},
            }).then(resolve, () => {});
          }),
      },
    };
    const engine = createIdempotencyEngine({ store, now: Date.now, onEvent: (event) => events.push(event) });
    const outcome = refusal(engine.run(request, () => work.opened));
    await vi.advanceTimersByTimeAsync(0);
    giveUp(new Error("connection closed"));
    const answered = await outcome;
    expect(answered).toMatchObject({ code: "STORE_UNAVAILABLE", at: 0 });
    expect(answered.message).toMatch(/none of its writes were kept/);
    work.open({ value: "late", response: { status: 200, body: '"late"' } });
    await vi.advanceTimersByTimeAsync(0);
    expect(events.map((event) => event.type)).toEqual(["store_error"]);
  });

  /** An atomic store on which another transaction holds every key, and whose reads answer when `reads` says. */
  function heldElsewhereStore(reads: () => Promise<{ running: boolean; record: undefined }>) {
    const store: IdempotencyStore<string> = {
      ...(memoryStore() as IdempotencyStore<never>),
      atomic: {
        waitMs: 500,
        transaction: (work) => work({ tx: "tx", claim: async () => ({ status: "busy" }), complete: async () => {} }),
        peek: reads,
      },
    };
    return store;
  }

  it("answers 409 once waitMs passed while the key is held elsewhere, even when a read never answers", async () => {
    const { engine } = engineOver(heldElsewhereStore(() => new Promise(() => {})));
    const outcome = refusal(engine.run(request, ok("1")));
    await vi.advanceTimersByTimeAsync(500);
    expect(await outcome).toMatchObject({ code: "IN_PROGRESS", at: 500 });
  });

  it("lets a duplicate that joined late wait out its own waitMs after the call it followed gave up", async () => {
    const { engine } = engineOver(heldElsewhereStore(async () => ({ running: true, record: undefined })));
    const first = refusal(engine.run(request, ok("1")));
    await vi.advanceTimersByTimeAsync(400);
    const late = refusal(engine.run(request, ok("1")));
    await vi.advanceTimersByTimeAsync(100);
    expect(await first).toMatchObject({ code: "IN_PROGRESS", at: 500 });
    await vi.advanceTimersByTimeAsync(400);
    expect(await late).toMatchObject({ code: "IN_PROGRESS", at: 900 });
  });

  it("lease mode: answers 503 when the claim never answers, and releases a claim that lands after that", async () => {
    const inner = memoryStore();
    const claimGate = gate();
    const released: number[] = [];
    const store: IdempotencyStore = {
      ...inner,
      claim: async (claim) => {
        await claimGate.opened;
        return inner.claim(claim);
      },
      release: async (id, fence) => {
        released.push(fence);
        return inner.release(id, fence);
      },
    };
    const { engine } = engineOver(store as IdempotencyStore<string>);
    const outcome = refusal(engine.run(request, ok("1")));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await outcome).toMatchObject({ code: "STORE_UNAVAILABLE", retryAfterMs: 1_000, at: 2_000 });
    claimGate.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(released).toEqual([1]);
    expect(await inner.get(request)).toBeUndefined();
  });
});

describe("the engine's signal in atomic mode", () => {
  it("hands the call one signal, read as often as it likes, that never aborts", async () => {
    const store: IdempotencyStore<string> = {
      ...(memoryStore() as IdempotencyStore<never>),
      atomic: {
        transaction: (work) =>
          work({
            tx: "tx",
            claim: async () => ({ status: "claimed", fence: 1, takeover: false }),
            complete: async () => {},
          }),
      },
    };
    const engine = createIdempotencyEngine({ store, ttlMs: 10_000 });
    const signals: AbortSignal[] = [];
    await engine.run(request, async (execution) => {
      signals.push(execution.signal, execution.signal);
      return { value: "ok", response: { status: 200, body: '"ok"' } };
    });
    expect(signals[0]).toBeInstanceOf(AbortSignal);
    expect(signals[1]).toBe(signals[0]);
    expect(signals[0]?.aborted).toBe(false);
  });
});

describe("the engine reading first when replays are what misses the cache", () => {
  /** An atomic store with `peek` that logs which way each request went. */
  function loggingStore() {
    const records = new Map<string, StoredRecord>();
    const log: string[] = [];
    const store: IdempotencyStore<string> = {
      ...(memoryStore() as IdempotencyStore<never>),
      atomic: {
        async transaction(work) {
          log.push("transaction");
          return work({
            tx: "tx",
            claim: async ({ id, fingerprint }) => {
              const record = records.get(id.key);
              if (record) return { status: "exists", record };
              records.set(id.key, { state: "in_progress", fingerprint, fence: 1, leaseExpiresAt: 0, expiresAt: 0 });
              return { status: "claimed", fence: 1, takeover: false };
            },
            complete: async (id, response, expiresAt) => {
              records.set(id.key, { state: "completed", fingerprint: "fp-1", fence: 1, response, expiresAt });
            },
          });
        },
        async peek(id) {
          log.push("peek");
          return { running: false, record: records.get(id.key) };
        },
      },
    };
    return { store, log };
  }

  it("goes straight to the transaction for first executions, reads first once replays dominate, and back", async () => {
    const { store, log } = loggingStore();
    const engine = createIdempotencyEngine({ store, replayCacheSize: 0, now: () => Date.UTC(2026, 0, 1) });
    const keys = Array.from({ length: 20 }, (_, n) => `key-${n}`);
    /** The paths the last `count` requests took. */
    const lastPaths = async (keysToRun: string[], count: number) => {
      const paths: string[] = [];
      for (const key of keysToRun) {
        const before = log.length;
        await engine.run({ ...request, key }, ok('"placed"'));
        paths.push(log.slice(before).join("+"));
      }
      return paths.slice(-count);
    };

    expect(await lastPaths(keys, 20)).toEqual(Array(20).fill("transaction"));
    expect(await lastPaths(keys, 5)).toEqual(Array(5).fill("peek"));
    const fresh = keys.map((key) => `fresh-${key}`);
    expect(await lastPaths(fresh, 5)).toEqual(Array(5).fill("transaction"));
  });
});
