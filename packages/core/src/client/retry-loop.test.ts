import { describe, expect, it } from "vitest";
import type { RetryPolicy } from "../retry.js";
import { type Attempted, type RetryLoopOptions, sendWithRetries } from "./retry-loop.js";

const policy: RetryPolicy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1_000, maxElapsedMs: 10_000 };

/** A clock the loop's waits move: no real time passes. */
function fakeTime(): Pick<RetryLoopOptions<string>, "now" | "sleep"> & { waits: number[] } {
  let nowMs = 0;
  const waits: number[] = [];
  return {
    waits,
    now: () => nowMs,
    async sleep(ms) {
      waits.push(ms);
      nowMs += ms;
    },
  };
}

/** Attempts that answer in turn from `answers`: a string is an answer, a number a retryable failure's Retry-After. */
function scripted(answers: Array<string | number | "fatal">) {
  const sent: number[] = [];
  const send = async (attempt: number): Promise<Attempted<string, string>> => {
    sent.push(attempt);
    const next = answers[attempt - 1];
    if (next === "fatal") return { failure: "fatal", retryable: false };
    if (typeof next === "number") return { failure: `lost ${attempt}`, retryable: true, retryAfterMs: next };
    return { answer: String(next) };
  };
  return { send, sent };
}

describe("sendWithRetries: the clients' one retry loop", () => {
  it("sends again after a retryable failure, waiting at least its Retry-After, until an answer", async () => {
    const time = fakeTime();
    const { send, sent } = scripted([0, 2_000, "placed"]);
    const ended = await sendWithRetries(send, { policy, signal: new AbortController().signal, ...time });
    expect(ended).toEqual({ answer: "placed", attempts: 3 });
    expect(sent).toEqual([1, 2, 3]);
    expect(time.waits[1]).toBeGreaterThanOrEqual(2_000);
  });

  it("ends with the last failure when it is not retryable, or the attempts are used up", async () => {
    const fatal = scripted([0, "fatal", "never"]);
    expect(await sendWithRetries(fatal.send, { policy, signal: new AbortController().signal, ...fakeTime() })).toEqual({
      failure: "fatal",
      attempts: 2,
      retryable: false,
    });
    const lost = scripted([0, 0, 0, 0, "never"]);
    expect(await sendWithRetries(lost.send, { policy, signal: new AbortController().signal, ...fakeTime() })).toEqual({
      failure: "lost 4",
      attempts: 4,
      retryable: true,
    });
  });

  it("ends at once on a failure once its signal aborted, and tells each scheduled wait first", async () => {
    const stop = new AbortController();
    const told: string[] = [];
    const { send, sent } = scripted([0, 0, "never"]);
    const ended = await sendWithRetries(
      async (attempt) => {
        if (attempt === 2) stop.abort();
        return send(attempt);
      },
      { policy, signal: stop.signal, ...fakeTime(), onRetry: (failure, attempt) => told.push(`${failure} ${attempt}`) },
    );
    expect(ended).toMatchObject({ failure: "lost 2", attempts: 2 });
    expect(sent).toEqual([1, 2]);
    expect(told).toEqual(["lost 1 1"]);
  });

  it("waits the caller's own way where it says so (offline), within what is left of the budget", async () => {
    const time = fakeTime();
    const left: number[] = [];
    const { send } = scripted([0, "placed"]);
    const ended = await sendWithRetries(send, {
      policy,
      signal: new AbortController().signal,
      ...time,
      waitInstead: (_, __, leftMs) => {
        left.push(leftMs);
        return Promise.resolve(true);
      },
    });
    expect(ended).toEqual({ answer: "placed", attempts: 2 });
    expect(time.waits).toEqual([]);
    expect(left).toEqual([10_000]);
  });
});
