import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { abortableDelay, Deadline } from "./deadline.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Whether `promise` has rejected by now, and with what. */
function watch(promise: Promise<unknown>) {
  const seen: { error?: Error } = {};
  promise.catch((error: Error) => {
    seen.error = error;
  });
  return seen;
}

describe("Deadline", () => {
  it("gives a later phase its own limit, with the timer the earlier phase set", async () => {
    const deadline = new Deadline();
    deadline.arm(100, () => new Error("first phase"));
    deadline.arm(1_000, () => new Error("second phase"));
    expect(vi.getTimerCount()).toBe(1);
    const waiting = watch(deadline.race(new Promise(() => {})));

    await vi.advanceTimersByTimeAsync(999);
    expect(waiting.error).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(waiting.error?.message).toBe("second phase");
    expect(deadline.missed?.message).toBe("second phase");
  });

  it("brings the timer forward for a phase that must end sooner", async () => {
    const deadline = new Deadline();
    deadline.arm(1_000, () => new Error("long phase"));
    deadline.arm(50, () => new Error("short phase"));
    const waiting = watch(deadline.race(new Promise(() => {})));

    await vi.advanceTimersByTimeAsync(50);
    expect(waiting.error?.message).toBe("short phase");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("lifts the limit for a phase without one, and leaves no timer once cleared", async () => {
    const deadline = new Deadline();
    deadline.arm(100, () => new Error("limited"));
    deadline.arm(Number.POSITIVE_INFINITY, () => new Error("unlimited"));
    const waiting = watch(deadline.race(new Promise(() => {})));
    await vi.advanceTimersByTimeAsync(10_000);
    expect(waiting.error).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);

    deadline.arm(100, () => new Error("limited again"));
    deadline.clear();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(waiting.error?.message).toMatch(/already been answered/);
  });

  it("holds a limit longer than a timer can wait until the limit itself", async () => {
    const deadline = new Deadline();
    const longMs = 2 ** 31 + 60_000;
    deadline.arm(longMs, () => new Error("long"));
    const waiting = watch(deadline.race(new Promise(() => {})));

    await vi.advanceTimersByTimeAsync(2 ** 31);
    expect(waiting.error).toBeUndefined();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(waiting.error?.message).toBe("long");
  });
});

describe("abortableDelay", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("resolves after the delay and not before", async () => {
    vi.useFakeTimers();
    let done = false;
    const waiting = abortableDelay(1_000).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(done).toBe(true);
  });

  it("rejects at once with the abort reason and leaves no timer behind", async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const waiting = abortableDelay(10_000, controller.signal);
    await vi.advanceTimersByTimeAsync(2_000);
    const reason = new Error("user left the page");
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("does not wait at all on a signal that is already aborted", async () => {
    vi.useFakeTimers();
    const waiting = abortableDelay(10_000, AbortSignal.abort());
    await expect(waiting).rejects.toMatchObject({ name: "AbortError" });
    expect(vi.getTimerCount()).toBe(0);
  });
});
