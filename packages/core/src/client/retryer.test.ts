import { afterEach, describe, expect, it, vi } from "vitest";
import {
  type Attempted,
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  nextRetryDelayMs,
  parseRetryAfterMs,
  type RetryClock,
  type RetryPolicy,
  retrying,
} from "./retryer.js";

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

const loopPolicy: RetryPolicy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1_000, maxElapsedMs: 10_000 };

/** A clock the retryer's waits move: no real time passes. */
function fakeTime(): { clock: RetryClock; waits: number[] } {
  let nowMs = 0;
  const waits: number[] = [];
  return {
    waits,
    clock: {
      now: () => nowMs,
      async sleep(ms) {
        waits.push(ms);
        nowMs += ms;
      },
    },
  };
}

/**
 * Attempts that answer in turn from `answers`: a string is an answer, a number a retryable failure's Retry-After,
 * "lost" an attempt no answer came back to.
 */
function scripted(answers: Array<string | number | "fatal" | "lost">) {
  const sent: number[] = [];
  const send = async (attempt: number): Promise<Attempted<string, string>> => {
    sent.push(attempt);
    const next = answers[attempt - 1];
    if (next === "fatal") return { failure: "fatal", retryable: false };
    if (next === "lost") return { failure: `lost ${attempt}`, retryable: true, lost: true };
    if (typeof next === "number") return { failure: `lost ${attempt}`, retryable: true, retryAfterMs: next };
    return { answer: String(next) };
  };
  return { send, sent };
}

describe("retrying: the clients' one retryer", () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it("sends again after a retryable failure, waiting at least its Retry-After, until an answer", async () => {
    const { clock, waits } = fakeTime();
    const { send, sent } = scripted([0, 2_000, "placed"]);
    const ended = await retrying(send, { policy: loopPolicy, signal: new AbortController().signal, clock });
    expect(ended).toEqual({ answer: "placed", attempts: 3 });
    expect(sent).toEqual([1, 2, 3]);
    expect(waits[1]).toBeGreaterThanOrEqual(2_000);
  });

  it("ends with the last failure when it is not retryable, or the attempts are used up", async () => {
    const options = () => ({ policy: loopPolicy, signal: new AbortController().signal, clock: fakeTime().clock });
    const fatal = scripted([0, "fatal", "never"]);
    expect(await retrying(fatal.send, options())).toEqual({ failure: "fatal", attempts: 2, retryable: false });
    const lost = scripted([0, 0, 0, 0, "never"]);
    expect(await retrying(lost.send, options())).toEqual({ failure: "lost 4", attempts: 4, retryable: true });
  });

  it("ends at once on a failure once its signal aborted, and tells each scheduled wait first", async () => {
    const stop = new AbortController();
    const told: string[] = [];
    const { send, sent } = scripted([0, 0, "never"]);
    const ended = await retrying(
      async (attempt) => {
        if (attempt === 2) stop.abort();
        return send(attempt);
      },
      {
        policy: loopPolicy,
        signal: stop.signal,
        clock: fakeTime().clock,
        onRetry: (failure, attempt) => told.push(`${failure} ${attempt}`),
      },
    );
    expect(ended).toMatchObject({ failure: "lost 2", attempts: 2 });
    expect(sent).toEqual([1, 2]);
    expect(told).toEqual(["lost 1 1"]);
  });

  it("pauses a lost attempt while the browser is offline and resumes with the same action once it is back", async () => {
    const browser = new EventTarget();
    const navigator = { onLine: false };
    vi.stubGlobal("navigator", navigator);
    vi.stubGlobal("addEventListener", browser.addEventListener.bind(browser));
    vi.stubGlobal("removeEventListener", browser.removeEventListener.bind(browser));
    const { clock, waits } = fakeTime();
    const paused: number[] = [];
    const { send, sent } = scripted(["lost", "placed"]);
    const ending = retrying(send, {
      policy: loopPolicy,
      signal: new AbortController().signal,
      clock: {
        now: clock.now,
        sleep: (_ms, signal) =>
          new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
      },
      onOffline: (attempt) => paused.push(attempt),
    });
    await vi.waitFor(() => expect(paused).toEqual([1]));
    expect(sent).toEqual([1]);
    navigator.onLine = true;
    browser.dispatchEvent(new Event("online"));
    expect(await ending).toEqual({ answer: "placed", attempts: 2 });
    // Back online, it sends at once: no backoff on top of the wait for the connection.
    expect(waits).toEqual([]);
  });

  it("follows the schedule for a lost attempt while online, and for an answered failure while offline", async () => {
    vi.stubGlobal("navigator", { onLine: false });
    vi.stubGlobal("addEventListener", () => {});
    const { clock, waits } = fakeTime();
    const paused: number[] = [];
    const { send } = scripted([0, "placed"]);
    const options = {
      policy: loopPolicy,
      signal: new AbortController().signal,
      clock,
      onOffline: () => paused.push(1),
    };
    expect(await retrying(send, options)).toEqual({ answer: "placed", attempts: 2 });
    expect([paused, waits.length]).toEqual([[], 1]);
  });
});
