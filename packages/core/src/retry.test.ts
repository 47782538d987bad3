import { afterEach, describe, expect, it, vi } from "vitest";
import {
  abortableDelay,
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  newIdempotencyKey,
  nextRetryDelayMs,
  parseRetryAfterMs,
  type RetryPolicy,
} from "./retry.js";

const policy: RetryPolicy = { maxAttempts: 6, baseDelayMs: 100, maxDelayMs: 1_000, maxElapsedMs: 5_000 };
const highest = () => 0.999_999;
const lowest = () => 0;

describe("backoffDelayMs", () => {
  it("doubles the ceiling with each failed attempt", () => {
    expect([1, 2, 3, 4].map((attempt) => backoffDelayMs(attempt, policy, highest))).toEqual([100, 200, 400, 800]);
  });

  it("never exceeds maxDelayMs, however many attempts failed", () => {
    expect(backoffDelayMs(5, policy, highest)).toBe(1_000);
    expect(backoffDelayMs(60, policy, highest)).toBe(1_000);
  });

  it("spreads delays over the whole range from 0 to the ceiling (full jitter)", () => {
    expect(backoffDelayMs(3, policy, lowest)).toBe(0);
    expect(backoffDelayMs(3, policy, () => 0.5)).toBe(200);
    const delays = Array.from({ length: 2_000 }, () => backoffDelayMs(3, policy));
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...delays)).toBeLessThanOrEqual(400);
    // Not clustered near the ceiling, as "equal jitter" would be: both halves of the range are used.
    expect(delays.filter((delay) => delay < 200).length).toBeGreaterThan(800);
    expect(delays.filter((delay) => delay >= 200).length).toBeGreaterThan(800);
  });
});

describe("parseRetryAfterMs", () => {
  const now = Date.parse("2026-11-30T12:00:00Z");

  it("reads delay-seconds", () => {
    expect(parseRetryAfterMs("2", now)).toBe(2_000);
    expect(parseRetryAfterMs(" 18 ", now)).toBe(18_000);
    expect(parseRetryAfterMs("0", now)).toBe(0);
  });

  it("reads an HTTP date as the time left until it, and a past date as now", () => {
    expect(parseRetryAfterMs("Mon, 30 Nov 2026 12:00:05 GMT", now)).toBe(5_000);
    expect(parseRetryAfterMs("Monday, 30-Nov-26 12:00:07 GMT", now)).toBe(7_000);
    expect(parseRetryAfterMs("Mon Nov 30 12:00:09 2026", now - new Date(now).getTimezoneOffset() * 60_000)).toBe(9_000);
    expect(parseRetryAfterMs("Sun, 29 Nov 2026 12:00:00 GMT", now)).toBe(0);
  });

  it("ignores what it cannot read, so the caller keeps its own schedule", () => {
    for (const value of [undefined, null, "", "soon", "-3", "1.5", "2e3", "Mon, 99 Foo 2026"]) {
      expect(parseRetryAfterMs(value, now)).toBeUndefined();
    }
  });
});

describe("nextRetryDelayMs", () => {
  const start = 1_000_000;

  it("follows the backoff schedule while attempts and time remain", () => {
    expect(nextRetryDelayMs({ attempt: 1, startedAtMs: start, nowMs: start + 50 }, policy, highest)).toBe(100);
    expect(nextRetryDelayMs({ attempt: 3, startedAtMs: start, nowMs: start + 500 }, policy, highest)).toBe(400);
  });

  it("stops after maxAttempts requests", () => {
    expect(nextRetryDelayMs({ attempt: 5, startedAtMs: start, nowMs: start }, policy, lowest)).toBe(0);
    expect(nextRetryDelayMs({ attempt: 6, startedAtMs: start, nowMs: start }, policy, lowest)).toBeUndefined();
  });

  it("waits at least the server's Retry-After, even above maxDelayMs", () => {
    expect(
      nextRetryDelayMs({ attempt: 1, startedAtMs: start, nowMs: start, retryAfterMs: 2_000 }, policy, highest),
    ).toBe(2_000);
    expect(nextRetryDelayMs({ attempt: 1, startedAtMs: start, nowMs: start, retryAfterMs: 0 }, policy, lowest)).toBe(0);
  });

  it("still backs off when the same short Retry-After comes back on every attempt", () => {
    const delays = [1, 2, 3, 4].map((attempt) =>
      nextRetryDelayMs({ attempt, startedAtMs: start, nowMs: start, retryAfterMs: 150 }, policy, highest),
    );
    expect(delays).toEqual([150, 200, 400, 800]);
  });

  it("stops when the next retry would start after maxElapsedMs", () => {
    expect(nextRetryDelayMs({ attempt: 2, startedAtMs: start, nowMs: start + 4_850 }, policy, highest)).toBe(undefined);
    expect(nextRetryDelayMs({ attempt: 2, startedAtMs: start, nowMs: start + 4_850 }, policy, () => 0.5)).toBe(100);
    expect(
      nextRetryDelayMs({ attempt: 1, startedAtMs: start, nowMs: start + 1_000, retryAfterMs: 4_500 }, policy),
    ).toBeUndefined();
  });

  it("has a default policy that gives up within a minute", () => {
    expect(DEFAULT_RETRY_POLICY).toEqual({
      maxAttempts: 5,
      baseDelayMs: 500,
      maxDelayMs: 10_000,
      maxElapsedMs: 60_000,
    });
    expect(Object.isFrozen(DEFAULT_RETRY_POLICY)).toBe(true);
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

describe("newIdempotencyKey", () => {
  it("mints distinct UUID v4 keys", () => {
    const keys = new Set(Array.from({ length: 1_000 }, newIdempotencyKey));
    expect(keys.size).toBe(1_000);
    for (const key of keys)
      expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
