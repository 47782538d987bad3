/// <reference types="node" />
/**
 * The engine's telemetry, read where an operator reads it: the OpenTelemetry SDK's in-memory span exporter and a
 * metric reader, and a `node:diagnostics_channel` subscriber. Every outcome of a call is seen, with its attributes;
 * an exporter that throws changes nothing; paths past the limit share one series; and what the app's own data may
 * hold (a scope, an error's message) is left out unless the app asks for it.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider, MetricReader, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type CallMessage, CallOutcome, type EventMessage } from "./engine/call-outcome.js";
import type { IdempotencyEngineOptions, Settlement, TelemetryOptions } from "./engine/types.js";
import { createIdempotencyEngine } from "./engine.js";
import { memoryStore } from "./memory-store.js";
import { MAX_SERIES_VALUES } from "./observing.js";
import type { IdempotencyStore } from "./store.js";

/** A reader the test collects from when it wants, with no timer. */
class CollectingReader extends MetricReader {
  protected onForceFlush = async () => {};
  protected onShutdown = async () => {};
}

function observed(
  options: Partial<IdempotencyEngineOptions<never>> = {},
  store: IdempotencyStore = memoryStore(),
  include?: TelemetryOptions["include"],
) {
  const spans = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const telemetry = { tracerProvider, meterProvider, ...(include && { include }) };
  const engine = createIdempotencyEngine({ store, telemetry, ...options });
  return {
    engine,
    spans: () =>
      spans.getFinishedSpans().map(
        (span): Record<string, unknown> => ({
          name: span.name,
          spanId: span.spanContext().spanId,
          ...span.attributes,
          status: span.status.code,
          events: span.events.map(({ name, attributes }) => ({ name, ...attributes })),
        }),
      ),
    async metric(name: string) {
      const { resourceMetrics } = await reader.collect();
      return pointsOf(resourceMetrics, name);
    },
  };
}

function pointsOf(resourceMetrics: ResourceMetrics, name: string) {
  return resourceMetrics.scopeMetrics
    .flatMap((scope) => scope.metrics)
    .filter((metric) => metric.descriptor.name === name)
    .flatMap((metric) => metric.dataPoints.map((point) => ({ attributes: point.attributes, value: point.value })));
}

const request = (key: string, fingerprint = "fp") => ({ scope: "alice", path: "orders.place", key, fingerprint });
/** A route handler's call named by its URL: each order's id makes a path of its own. */
const onUrl = (order: number | string) => ({ ...request("k"), path: `/api/orders/${order}/pay` });
const stored = async (): Promise<Settlement<string>> => ({ value: "ok", response: { status: 200, body: '"ok"' } });
const released = async (): Promise<Settlement<string>> => ({ value: "later", response: undefined });
const failing = async (): Promise<Settlement<string>> => {
  throw new Error("the warehouse is down");
};
const settled = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    () => undefined,
  );

describe("the engine's telemetry", () => {
  const messages: CallMessage[] = [];
  const onCall = (message: unknown) => messages.push(message as CallMessage);
  subscribe("idemkit:call", onCall);
  afterEach(() => {
    messages.length = 0;
  });

  it("counts a call that ran unrecorded as such, once the answer it kept storing is in", async () => {
    vi.useFakeTimers();
    try {
      const store = memoryStore();
      let failures = 3;
      const flaky: IdempotencyStore = {
        ...store,
        complete: (...args) => (failures-- > 0 ? Promise.reject(new Error("reset")) : store.complete(...args)),
      };
      const { engine, metric } = observed({ mode: "lease" }, flaky);
      await expect(
        Promise.all([engine.run(request("a"), stored), vi.advanceTimersByTimeAsync(600)]),
      ).rejects.toMatchObject({ code: "RAN_UNRECORDED" });
      await vi.advanceTimersByTimeAsync(1_000);
      const byOutcome = Object.fromEntries(
        (await metric("idemkit.calls")).map((point) => [point.attributes["idemkit.outcome"], point.value]),
      );
      expect(byOutcome).toEqual({ [CallOutcome.UNRECORDED]: 1 });
    } finally {
      vi.useRealTimers();
    }
  });

  it("counts every outcome, with a span for each call, and the calls in flight back at zero", async () => {
    const { engine, spans, metric } = observed({ mode: "lease" });
    await engine.run(request("a"), stored);
    await engine.run(request("a"), stored);
    await settled(engine.run(request("a", "other"), stored));
    await engine.run(request("b"), released);
    await settled(engine.run(request("c"), failing));
    let finish!: () => void;
    const running = engine.run(
      request("d"),
      () =>
        new Promise<Settlement<string>>(
          (resolve) => (finish = () => resolve({ value: "ok", response: { status: 200, body: "1" } })),
        ),
    );
    await settled(engine.run(request("d"), stored));
    finish();
    await running;

    const byOutcome = Object.fromEntries(
      (await metric("idemkit.calls")).map((point) => [point.attributes["idemkit.outcome"], point.value]),
    );
    expect(byOutcome).toEqual({
      [CallOutcome.EXECUTED]: 2,
      [CallOutcome.REPLAYED]: 1,
      [CallOutcome.MISMATCH]: 1,
      [CallOutcome.RELEASED]: 2,
      [CallOutcome.CONFLICT]: 1,
    });
    expect((await metric("idemkit.calls.active")).map((point) => point.value)).toEqual([0]);
    expect(await metric("idemkit.replay.ratio")).toEqual([
      { attributes: { "idemkit.path": "orders.place" }, value: 1 / 3 },
    ]);
    const durations = await metric("idemkit.call.duration");
    expect(durations.map((point) => (point.value as { count: number }).count).reduce((a, b) => a + b)).toBe(7);
    expect(spans()).toHaveLength(7);
    expect(spans()[0]).toMatchObject({
      name: "idemkit orders.place",
      "idemkit.mode": "lease",
      "idemkit.path": "orders.place",
      "idemkit.key": "a",
      "idemkit.outcome": "executed",
      "idemkit.replayed": false,
    });
    expect(spans()[1]).toMatchObject({ "idemkit.outcome": "replayed", "idemkit.replayed": true });
    // A refusal is the contract working; a failure is an error on the span.
    expect(spans().map((span) => span.status)).toEqual([0, 0, 0, 0, 2, 0, 0]);
    expect(messages.map((message) => message.outcome)).toEqual([
      "executed",
      "replayed",
      "mismatch",
      "released",
      "released",
      "conflict",
      "executed",
    ]);
    // A copy of what was thrown: a subscriber that changes it changes nothing of the caller's error.
    expect(messages[4]?.error).toEqual({ name: "Error" });
    expect(messages[2]?.error).toMatchObject({ name: "IdempotencyError", code: "FINGERPRINT_MISMATCH" });
  });

  it("counts a call refused by the limits as rate_limited, a refusal and not an error", async () => {
    const { engine, spans, metric } = observed({ limits: { newKeysPerScope: { max: 1, windowMs: 60_000 } } });
    await engine.run(request("a"), stored);
    await settled(engine.run(request("b"), stored));
    expect((await metric("idemkit.calls")).map((point) => [point.attributes["idemkit.outcome"], point.value])).toEqual([
      [CallOutcome.EXECUTED, 1],
      [CallOutcome.RATE_LIMITED, 1],
    ]);
    expect((await metric("idemkit.calls.active")).map((point) => point.value)).toEqual([0]);
    expect(spans().map((span) => [span["idemkit.outcome"], span.status])).toEqual([
      ["executed", 0],
      ["rate_limited", 0],
    ]);
  });

  it("counts a store that fails, and a lease lost before the answer was stored", async () => {
    const broken = memoryStore();
    const down: IdempotencyStore = {
      ...broken,
      claim: async () => {
        throw new Error("connection refused");
      },
    };
    const lost: IdempotencyStore = { ...memoryStore(), complete: async () => false };
    const storeDown = observed({ mode: "lease" }, down);
    await settled(storeDown.engine.run(request("a"), stored));
    const leaseLost = observed({ mode: "lease" }, lost);
    await settled(leaseLost.engine.run(request("a"), stored));
    expect((await storeDown.metric("idemkit.calls")).map((point) => point.attributes["idemkit.outcome"])).toEqual([
      CallOutcome.STORE_ERROR,
    ]);
    expect((await leaseLost.metric("idemkit.calls")).map((point) => point.attributes["idemkit.outcome"])).toEqual([
      CallOutcome.LEASE_LOST,
    ]);
    expect(storeDown.spans()[0]?.status).toBe(2);
  });

  it("counts a lease-mode call answered at procedureTimeoutMs as timed_out, in flight until its work is done", async () => {
    vi.useFakeTimers();
    try {
      const { engine, spans, metric } = observed({ mode: "lease", procedureTimeoutMs: 5_000 });
      let finish!: () => void;
      const slow = settled(
        engine.run(request("a"), async () => {
          await new Promise<void>((resolve) => (finish = resolve));
          return stored();
        }),
      );
      await vi.advanceTimersByTimeAsync(5_000);
      await slow;
      expect((await metric("idemkit.calls.active")).map((point) => point.value)).toEqual([1]);
      expect(await metric("idemkit.calls")).toEqual([]);
      await vi.advanceTimersByTimeAsync(2_000);
      finish();
      await vi.advanceTimersByTimeAsync(0);
      expect((await metric("idemkit.calls.active")).map((point) => point.value)).toEqual([0]);
      expect(
        (await metric("idemkit.calls")).map((point) => [point.attributes["idemkit.outcome"], point.value]),
      ).toEqual([[CallOutcome.TIMED_OUT, 1]]);
      const [duration] = await metric("idemkit.call.duration");
      // Measured to when its work was done, not to its answer.
      expect(duration?.value).toMatchObject({ count: 1, sum: expect.closeTo(7, 1) });
      expect(spans()).toMatchObject([{ "idemkit.outcome": "timed_out", status: 2 }]);
      expect(messages).toMatchObject([{ outcome: "timed_out", key: "a" }]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("makes each call's span the active one while it runs, so the procedure's own spans are its children", async () => {
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    try {
      const { engine, spans } = observed({ mode: "lease" });
      let parentOfCharge: string | undefined;
      await engine.run(request("a"), async () => {
        await new Promise((resolve) => setImmediate(resolve));
        parentOfCharge = trace.getActiveSpan()?.spanContext().spanId;
        return stored();
      });
      expect(parentOfCharge).toBeDefined();
      expect(spans()).toHaveLength(1);
      expect(parentOfCharge).toBe(spans()[0]?.spanId);
      expect(trace.getActiveSpan()).toBeUndefined();
    } finally {
      context.disable();
    }
  });

  it("tells on each span how long the call waited, what its store took, and what its procedure took", async () => {
    vi.useFakeTimers();
    const elapse = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
    try {
      const slowStore: IdempotencyStore<string> = {
        ...(memoryStore() as IdempotencyStore<never>),
        atomic: {
          async transaction(work) {
            await elapse(5); // BEGIN
            const value = await work({
              tx: "tx",
              claim: async () => {
                await elapse(10);
                return { status: "claimed", fence: 1, takeover: false };
              },
              complete: () => elapse(10),
            });
            await elapse(5); // COMMIT
            return value;
          },
        },
      };
      const { engine, spans } = observed({}, slowStore as IdempotencyStore);
      const charge = async () => {
        await elapse(100);
        return stored();
      };
      // The second press comes while the first runs: it waits for it here, in memory, and replays its answer.
      const first = engine.run(request("a"), charge);
      await vi.advanceTimersByTimeAsync(30);
      const second = engine.run(request("a"), charge);
      await vi.advanceTimersByTimeAsync(100);
      await Promise.all([first, second]);
      const timings = spans().map((span) => [
        span["idemkit.outcome"],
        span["idemkit.waited_ms"],
        span["idemkit.store_ms"],
        span["idemkit.procedure_ms"],
      ]);
      expect(timings).toEqual([
        ["executed", 0, 30, 100],
        ["replayed", 100, 0, 0],
      ]);
      expect(messages.map(({ waitedMs, storeMs }) => [waitedMs, storeMs])).toEqual([
        [0, 30],
        [100, 0],
      ]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("names at most MAX_SERIES_VALUES paths in every instrument and span name, a path named first keeping its own", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const { engine, spans, metric } = observed();
      await engine.run(request("before"), stored);
      for (let order = 0; order < 3_000; order++) await engine.run(onUrl(order), stored);
      await engine.run(request("after"), stored);

      for (const name of ["idemkit.calls", "idemkit.calls.active", "idemkit.call.duration", "idemkit.replay.ratio"]) {
        const points = await metric(name);
        expect(points, name).toHaveLength(MAX_SERIES_VALUES + 1);
        expect(
          points.filter((point) => point.attributes["otel.metric.overflow"] === true),
          name,
        ).toHaveLength(1);
      }
      const calls = await metric("idemkit.calls");
      // The route came before the URLs filled the limit: its calls after them are still its own.
      expect(calls.find((point) => point.attributes["idemkit.path"] === "orders.place")?.value).toBe(2);
      // The route and the first URLs are named; the other URLs are counted together, by how they ended.
      expect(calls.find((point) => point.attributes["otel.metric.overflow"] === true)).toEqual({
        attributes: { "idemkit.mode": "lease", "idemkit.outcome": "executed", "otel.metric.overflow": true },
        value: 3_000 - (MAX_SERIES_VALUES - 1),
      });
      expect(await metric("idemkit.replay.ratio")).toContainEqual({
        attributes: { "otel.metric.overflow": true },
        value: 0,
      });

      const names = spans().map((span) => span.name);
      expect(new Set(names).size).toBe(MAX_SERIES_VALUES + 1);
      expect(names.at(-1)).toBe("idemkit orders.place");
      // A span past the limit is named for idemkit alone; its own URL is still an attribute, for whoever reads it.
      expect(spans().at(-2)).toMatchObject({ name: "idemkit", "idemkit.path": "/api/orders/2999/pay" });

      expect(warn).toHaveBeenCalledOnce();
      expect(warn.mock.calls[0]?.[0]).toMatch(
        new RegExp(`idemkit\\.path.*"/api/orders/${MAX_SERIES_VALUES - 1}/pay".*Name its route instead`),
      );
    } finally {
      warn.mockRestore();
    }
  });

  it("brings idemkit.calls.active back to 0 on every series, for calls in flight while the limit is reached", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const { engine, metric } = observed();
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const held = async () => {
        await gate;
        return stored();
      };
      // Started while there was room for its path, ended once there is none.
      const named = engine.run(request("held"), held);
      for (let order = 0; order < 3_000; order++) await engine.run(onUrl(order), stored);
      // Started past the limit.
      const overflowed = engine.run(onUrl("late"), held);
      const inFlight = (await metric("idemkit.calls.active")).filter((point) => point.value !== 0);
      expect(inFlight).toEqual([
        { attributes: { "idemkit.mode": "lease", "idemkit.path": "orders.place" }, value: 1 },
        { attributes: { "idemkit.mode": "lease", "otel.metric.overflow": true }, value: 1 },
      ]);
      open();
      await Promise.all([named, overflowed]);

      const active = await metric("idemkit.calls.active");
      expect(active).toHaveLength(MAX_SERIES_VALUES + 1);
      expect(new Set(active.map((point) => point.value))).toEqual(new Set([0]));
    } finally {
      warn.mockRestore();
    }
  });

  it("changes no outcome when the telemetry throws, and publishes each decision on idemkit:event", async () => {
    const events: unknown[] = [];
    const onEvent = (event: unknown) => events.push(event);
    subscribe("idemkit:event", onEvent);
    const throwing = {
      getTracer: () => {
        throw new Error("broken exporter");
      },
    };
    try {
      const engine = createIdempotencyEngine({ store: memoryStore(), telemetry: { tracerProvider: throwing } });
      expect(await engine.run(request("a"), stored)).toEqual({ replayed: false, value: "ok" });
      await settled(engine.run(request("b"), failing));
      await engine.run(request("c"), released);
      expect(events).toEqual([
        { type: "executed", path: "orders.place", key: "a" },
        { type: "released", path: "orders.place", key: "b", error: { name: "Error" } },
        // Released with nothing gone wrong: no error made up for it.
        { type: "released", path: "orders.place", key: "c" },
      ]);
    } finally {
      unsubscribe("idemkit:event", onEvent);
    }
  });

  it("leaves the scope out of idemkit:event messages, unless include.scope", async () => {
    const events: EventMessage[] = [];
    const onEvent = (event: unknown) => events.push(event as EventMessage);
    subscribe("idemkit:event", onEvent);
    try {
      await createIdempotencyEngine({ store: memoryStore() }).run(request("a"), stored);
      const telemetry = { include: { scope: true } };
      await createIdempotencyEngine({ store: memoryStore(), telemetry }).run(request("a"), stored);
      expect(events).toEqual([
        { type: "executed", path: "orders.place", key: "a" },
        { type: "executed", scope: "alice", path: "orders.place", key: "a" },
      ]);
      // Never on idemkit:call, whatever include says.
      expect(messages.map((message) => "scope" in message)).toEqual([false, false]);
    } finally {
      unsubscribe("idemkit:event", onEvent);
    }
  });

  it("tells an error by its name and code on channels and spans, its message only with include.errorMessages", async () => {
    const detail = "card declined for ada@example.com";
    const declined = async (): Promise<Settlement<string>> => {
      throw Object.assign(new Error(detail), { code: "card_declined" });
    };
    const events: EventMessage[] = [];
    const onEvent = (event: unknown) => events.push(event as EventMessage);
    subscribe("idemkit:event", onEvent);
    try {
      const byDefault = observed();
      await settled(byDefault.engine.run(request("a"), declined));
      expect(messages.map((message) => message.error)).toEqual([{ name: "Error", code: "card_declined" }]);
      expect(events.map((event) => event.error)).toEqual([{ name: "Error", code: "card_declined" }]);
      expect(byDefault.spans()[0]?.events).toEqual([{ name: "exception", "exception.type": "card_declined" }]);
      expect(JSON.stringify([messages, events, byDefault.spans()])).not.toContain("ada@example.com");

      messages.length = 0;
      events.length = 0;
      const withMessages = observed({}, memoryStore(), { errorMessages: true });
      await settled(withMessages.engine.run(request("a"), declined));
      const summary = { name: "Error", code: "card_declined", message: detail };
      expect(messages.map((message) => message.error)).toEqual([summary]);
      expect(events.map((event) => event.error)).toEqual([summary]);
      expect(withMessages.spans()[0]?.events).toEqual([
        {
          name: "exception",
          "exception.type": "card_declined",
          "exception.message": detail,
          "exception.stacktrace": expect.stringContaining(detail),
        },
      ]);
    } finally {
      unsubscribe("idemkit:event", onEvent);
    }
  });

  it("goes to the global providers by default, and nowhere with telemetry: false", async () => {
    const spans = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
    try {
      await createIdempotencyEngine({ store: memoryStore() }).run(request("a"), stored);
      expect([spans.getFinishedSpans().length, messages.length]).toEqual([1, 1]);
      await createIdempotencyEngine({ store: memoryStore(), telemetry: false }).run(request("a"), stored);
      expect([spans.getFinishedSpans().length, messages.length]).toEqual([1, 1]);
    } finally {
      trace.disable();
    }
  });
});
