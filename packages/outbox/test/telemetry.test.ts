/**
 * The outbox's telemetry against a real PostgreSQL, read in the OpenTelemetry SDK's metric reader and on the
 * diagnostics channels: what the relay published, retried and gave up on, by topic, how long events waited, and
 * what processOnce did with each delivery.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { openPostgres } from "@idemkit/testkit";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
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
    expect(
      seen.filter((event) => event.type !== "error" && event.event.topic === topic).map((event) => event.type),
    ).toEqual(["published", "dead"]);
    expect(seen.find((event) => event.type === "dead")?.error).toEqual({
      name: "Error",
      message: "the broker is down",
    });
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
    expect(messages[2]?.error).toEqual({ name: "Error", message: "the mail server is down" });
  });
});
