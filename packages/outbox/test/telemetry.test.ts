/**
 * The outbox's telemetry against a real PostgreSQL, read in the OpenTelemetry SDK's metric reader and on the
 * diagnostics channels: what the relay published, retried and gave up on, by topic, how long events waited, and
 * what processOnce did with each delivery; topics and consumers past the limit on one series; and the channels
 * without payloads or error messages unless the app asks for them.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { connectPostgres, openPostgres } from "@idemkit/testkit";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import {
  createOutbox,
  createRelay,
  outboxEventsTable,
  type ProcessedMessage,
  processOnce,
  type RelayMessage,
} from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 4 });
});
afterAll(() => database.close());

class CollectingReader extends MetricReader {
  protected onForceFlush = async () => {};
  protected onShutdown = async () => {};
}

function metered() {
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return {
    meterProvider,
    async points(name: string) {
      const { resourceMetrics } = await reader.collect();
      return resourceMetrics.scopeMetrics
        .flatMap((scope) => scope.metrics)
        .filter((metric) => metric.descriptor.name === name)
        .flatMap((metric) => metric.dataPoints.map(({ attributes, value }) => ({ attributes, value })));
    },
  };
}

describe("the outbox's telemetry", () => {
  it("counts what the relay did with each event, by topic, and how long published events waited", async () => {
    // A table of its own: a relay on the shared one would publish the events of tests running beside it.
    await database.query("create table telemetry_events (like outbox_events including all)");
    const table = outboxEventsTable("telemetry_events");
    const topic = "order.placed";
    const outbox = createOutbox({ table });
    await database.db.transaction(async (tx) => {
      for (const key of ["ok", "broken"])
        await outbox.enqueue({ tx }, { topic, payload: { key }, key: `${topic}:${key}` });
    });
    // Enqueued two seconds ago: the lag is read on the database's clock.
    await database.query("update telemetry_events set created_at = now() - interval '2 seconds'");
    const { meterProvider, points } = metered();
    const seen: RelayMessage[] = [];
    const onRelay = (event: unknown) => seen.push(event as RelayMessage);
    subscribe("idemkit:relay", onRelay);
    try {
      const relay = createRelay({
        db: database.db,
        table,
        telemetry: { meterProvider },
        maxAttempts: 1,
        publish: (event) => {
          if ((event.payload as { key: string }).key === "broken") throw new Error("the broker is down");
        },
      });
      await relay.runOnce();
    } finally {
      unsubscribe("idemkit:relay", onRelay);
    }
    const ours = (await points("idemkit.outbox.events")).filter((point) => point.attributes["idemkit.topic"] === topic);
    expect(Object.fromEntries(ours.map((point) => [point.attributes["idemkit.result"], point.value]))).toEqual({
      published: 1,
      dead: 1,
    });
    const lag = (await points("idemkit.outbox.lag")).find((point) => point.attributes["idemkit.topic"] === topic);
    expect(lag?.value).toMatchObject({ count: 1 });
    expect((lag?.value as { min?: number } | undefined)?.min).toBeGreaterThanOrEqual(2);
    // Each is reported as its mark is answered: on a pool, in no set order.
    expect(
      seen
        .filter((event) => event.type !== "error" && event.event.topic === topic)
        .map((event) => event.type)
        .sort(),
    ).toEqual(["dead", "published"]);
    expect(seen.find((event) => event.type === "dead")?.error).toEqual({ name: "Error" });
  });

  it("counts a batch that failed once, whether the relay's loop or the app called runOnce", async () => {
    const { meterProvider, points } = metered();
    const reported: string[] = [];
    const relay = createRelay({
      db: database.db,
      table: outboxEventsTable("no_such_events"),
      telemetry: { meterProvider },
      publish: () => {},
      onEvent: (event) => reported.push(event.type),
    });
    await expect(relay.runOnce()).rejects.toThrow(/no_such_events/);
    expect((await points("idemkit.outbox.errors")).map((point) => point.value)).toEqual([1]);
    expect(reported).toEqual(["error"]);
  });

  it("counts each delivery processOnce took: processed once, then a duplicate, and a handler that failed", async () => {
    const { meterProvider, points } = metered();
    const consumer = `mailer.${globalThis.crypto.randomUUID()}`;
    const messages: ProcessedMessage[] = [];
    const onProcessed = (message: unknown) => messages.push(message as ProcessedMessage);
    subscribe("idemkit:process-once", onProcessed);
    try {
      const options = { db: database.db, consumer, telemetry: { meterProvider } };
      await processOnce({ ...options, eventId: "e1" }, async () => "sent");
      await processOnce({ ...options, eventId: "e1" }, async () => "sent again");
      await processOnce({ ...options, eventId: "e2" }, async () => {
        throw new Error("the mail server is down");
      }).catch(() => {});
    } finally {
      unsubscribe("idemkit:process-once", onProcessed);
    }
    const counted = (await points("idemkit.processed_events")).map((point) => [
      point.attributes["idemkit.result"],
      point.value,
    ]);
    expect(Object.fromEntries(counted)).toEqual({ processed: 1, duplicate: 1, failed: 1 });
    expect(messages.map((message) => [message.eventId, message.result])).toEqual([
      ["e1", "processed"],
      ["e1", "duplicate"],
      ["e2", "failed"],
    ]);
    expect(messages[2]?.error).toEqual({ name: "Error" });
  });

  it("leaves payloads and error messages out of the channels' messages, unless include asks for them", async () => {
    await database.query("create table telemetry_detail_events (like outbox_events including all)");
    const table = outboxEventsTable("telemetry_detail_events");
    await database.db.transaction((tx) =>
      createOutbox({ table }).enqueue(
        { tx },
        { topic: "order.placed", key: "order.placed:ada", payload: { email: "ada@example.com" } },
      ),
    );
    const refused = new Error("the broker refused ada@example.com");
    const seen: RelayMessage[] = [];
    const onRelay = (event: unknown) => seen.push(event as RelayMessage);
    const processed: ProcessedMessage[] = [];
    const onProcessed = (message: unknown) => processed.push(message as ProcessedMessage);
    subscribe("idemkit:relay", onRelay);
    subscribe("idemkit:process-once", onProcessed);
    try {
      const consumer = `mailer.${globalThis.crypto.randomUUID()}`;
      // The same event and the same failure, told by default, then with everything included: a failed attempt or
      // handler leaves the event to be taken again.
      for (const include of [undefined, { payloads: true, errorMessages: true }]) {
        const telemetry = { meterProvider: metered().meterProvider, ...(include && { include }) };
        const relay = createRelay({
          db: database.db,
          table,
          telemetry,
          retryDelayMs: () => 0,
          publish: () => {
            throw refused;
          },
        });
        await relay.runOnce();
        await processOnce({ db: database.db, consumer, eventId: "e1", telemetry }, async () => {
          throw refused;
        }).catch(() => {});
      }
    } finally {
      unsubscribe("idemkit:relay", onRelay);
      unsubscribe("idemkit:process-once", onProcessed);
    }
    const [byDefault, included] = seen;
    expect(byDefault).toMatchObject({ type: "failed", event: { topic: "order.placed" }, error: { name: "Error" } });
    expect(JSON.stringify(byDefault)).not.toContain("ada@example.com");
    expect(byDefault).not.toHaveProperty("event.payload");
    expect(processed[0]?.error).toEqual({ name: "Error" });

    expect(included).toMatchObject({
      type: "failed",
      event: { topic: "order.placed", payload: { email: "ada@example.com" } },
      error: { name: "Error", message: refused.message },
    });
    expect(processed[1]?.error).toEqual({ name: "Error", message: refused.message });
  });

  it("keeps topics and consumers past the limit on one series, the first ones on their own", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      await database.query("create table telemetry_topic_events (like outbox_events including all)");
      const table = outboxEventsTable("telemetry_topic_events");
      const outbox = createOutbox({ table });
      // An id in each topic: a topic of its own per order.
      const orders = 300;
      await database.db.transaction(async (tx) => {
        for (let order = 0; order < orders; order++) {
          await outbox.enqueue({ tx }, { topic: `order.${order}.placed`, key: `order.${order}`, payload: {} });
        }
      });
      const { meterProvider, points } = metered();
      const telemetry = { meterProvider };
      // The relay's marks are counted as they are answered: on one connection, in the order they were sent, where
      // on several a loaded machine can answer the first one after ninety others.
      const oneConnection = connectPostgres(database.url, { max: 1 });
      try {
        await createRelay({ db: oneConnection.db, table, telemetry, batchSize: orders, publish: () => {} }).runOnce();
      } finally {
        await oneConnection.close();
      }
      for (let order = 0; order < orders; order++) {
        await processOnce({ db: database.db, consumer: `mailer.${order}`, eventId: "e1", telemetry }, async () => {});
      }

      // Events are handled oldest first: the first order's topic is named, the last one's is not.
      for (const [name, attribute, first, last] of [
        ["idemkit.outbox.events", "idemkit.topic", "order.0.placed", "order.299.placed"],
        ["idemkit.outbox.lag", "idemkit.topic", "order.0.placed", "order.299.placed"],
        ["idemkit.processed_events", "idemkit.consumer", "mailer.0", "mailer.299"],
      ] as const) {
        const series = await points(name);
        const named = series.map((point) => point.attributes[attribute]);
        expect(series.length, name).toBeLessThan(orders);
        expect(
          series.filter((point) => point.attributes["otel.metric.overflow"] === true),
          name,
        ).toHaveLength(1);
        expect(named, name).toContain(first);
        expect(named, name).not.toContain(last);
      }
      const counted = await points("idemkit.outbox.events");
      const total = counted.reduce((sum, point) => sum + Number(point.value), 0);
      expect(total).toBe(orders);
      expect(counted.find((point) => point.attributes["otel.metric.overflow"] === true)?.attributes).toEqual({
        "idemkit.result": "published",
        "otel.metric.overflow": true,
      });
      expect(warn.mock.calls.map(([message]) => String(message).match(/values of ([\w.]+)/)?.[1])).toEqual([
        "idemkit.topic",
        "idemkit.consumer",
      ]);
    } finally {
      warn.mockRestore();
    }
  });
});
