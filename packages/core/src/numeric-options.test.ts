import { describe, expect, it } from "vitest";
import { retryPolicyOf } from "./client/retryer.js";
import { createIdempotencyEngine } from "./engine.js";
import { withIdempotency } from "./fetch.js";
import { memoryStore } from "./memory-store.js";

const engineWith = (options: Record<string, unknown>) => () =>
  createIdempotencyEngine({ store: memoryStore(), ...options });

describe("numeric options, checked when an endpoint is built", () => {
  it.each([
    ["ttlMs", Number.POSITIVE_INFINITY],
    ["leaseMs", Number.POSITIVE_INFINITY],
    ["leaseMs", 2 ** 31],
    ["ttlMs", 0],
    ["storeTimeoutMs", Number.NaN],
    ["transactionTimeoutMs", -1],
    ["procedureTimeoutMs", "30000"],
    ["busyRetryAfterMs", Number.POSITIVE_INFINITY],
    ["replayCacheSize", 1.5],
  ])("refuses %s: %s with a TypeError naming it", (name, value) => {
    expect(engineWith({ [name]: value })).toThrow(new RegExp(`^idemkit: ${name} must be`));
  });

  it("takes Infinity as no limit where the options say so", () => {
    expect(
      engineWith({
        storeTimeoutMs: Number.POSITIVE_INFINITY,
        transactionTimeoutMs: Number.POSITIVE_INFINITY,
        procedureTimeoutMs: Number.POSITIVE_INFINITY,
        maxHoldMs: Number.POSITIVE_INFINITY,
      }),
    ).not.toThrow();
  });

  it("checks the Fetch adapter's and the client's own", () => {
    const handler = async () => new Response("ok");
    const scope = () => "s";
    expect(() => withIdempotency(handler, { store: memoryStore(), scope, path: () => "p", maxBodyBytes: -5 })).toThrow(
      /maxBodyBytes must be a whole number, 0 or more/,
    );
    expect(() =>
      withIdempotency(handler, { store: memoryStore(), scope, path: () => "p", bodyTimeoutMs: Number.NaN }),
    ).toThrow(/bodyTimeoutMs/);
    expect(() => retryPolicyOf({ maxAttempts: 0 }, "idempotencyLink()")).toThrow(
      /^idempotencyLink\(\): retry.maxAttempts/,
    );
    expect(() => retryPolicyOf({ baseDelayMs: Number.POSITIVE_INFINITY }, "x")).toThrow(/retry.baseDelayMs/);
    expect(retryPolicyOf({ maxAttempts: Number.POSITIVE_INFINITY }, "x").maxAttempts).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("withIdempotency's bodyTimeoutMs: Infinity", () => {
  it("reads the body with no timer, where setTimeout(…, Infinity) would have answered 408 at once", async () => {
    let runs = 0;
    const endpoint = withIdempotency(
      async (request) => {
        runs++;
        return new Response(await request.text());
      },
      { store: memoryStore(), scope: () => "s", path: () => "echo", bodyTimeoutMs: Number.POSITIVE_INFINITY },
    );
    const slowBody = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await new Promise((resolve) => setImmediate(resolve));
        controller.enqueue(new TextEncoder().encode("hello"));
        controller.close();
      },
    });
    const answer = await endpoint(
      new Request("http://app.test/echo", {
        method: "POST",
        body: slowBody,
        headers: { "Idempotency-Key": "k1" },
        duplex: "half",
      } as RequestInit),
    );
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe("hello");
    expect(runs).toBe(1);
  });
});
