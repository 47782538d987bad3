/**
 * What an operator sees of effects after the response: the relay's events published, failed (to be retried), dead
 * and taken over, by topic; how long an event waited between its enqueue and its publication (the lag); and each
 * consumer's deliveries processed once or skipped as duplicates. OpenTelemetry through `@opentelemetry/api` (a no-op
 * until the app registers an SDK), and the channels `idemkit:relay` (each `RelayEvent`) and `idemkit:process-once`.
 *
 * | name                         | kind          | attributes                                             |
 * |------------------------------|---------------|--------------------------------------------------------|
 * | `idemkit.outbox.events`      | counter       | `idemkit.result` (published, failed, dead, lease_lost), `idemkit.topic` |
 * | `idemkit.outbox.lag`         | histogram (s) | `idemkit.topic`                                        |
 * | `idemkit.outbox.errors`      | counter       | (a batch that failed: the database away)               |
 * | `idemkit.processed_events`   | counter       | `idemkit.result` (processed, duplicate, failed), `idemkit.consumer` |
 */
import {
  channelNamed,
  type ErrorSummary,
  instrumentsPer,
  publishTo,
  quietly,
  withErrorSummary,
} from "@idemkit/core/internal";
import { type MeterProvider, metrics } from "@opentelemetry/api";
import type { RelayEvent } from "./relay.js";

/** Where the outbox's metrics go: the global meter provider by default, or this one; false for none. */
export interface OutboxTelemetryOptions {
  meterProvider?: MeterProvider;
}

/** What `idemkit:process-once` subscribers get, once per delivery. */
export interface ProcessedMessage {
  consumer: string;
  eventId: string;
  result: "processed" | "duplicate" | "failed";
  /** For a failed delivery: what the handler threw. */
  error?: ErrorSummary;
}

/** What `idemkit:relay` subscribers get: each `RelayEvent`, its error summed up (a copy, never the error itself). */
export type RelayMessage = {
  [T in RelayEvent["type"]]: Omit<Extract<RelayEvent, { type: T }>, "error"> & { error?: ErrorSummary };
}[RelayEvent["type"]];

const channels = { relay: channelNamed("idemkit:relay"), processOnce: channelNamed("idemkit:process-once") };

const instrumentsOf = instrumentsPer("@idemkit/outbox", (meter) => ({
  events: meter.createCounter("idemkit.outbox.events", {
    description: "Outbox events the relay handled, by what became of them.",
    unit: "{event}",
  }),
  lag: meter.createHistogram("idemkit.outbox.lag", {
    description: "How long an event waited between its enqueue (its created_at) and its publication.",
    unit: "s",
  }),
  errors: meter.createCounter("idemkit.outbox.errors", {
    description: "Relay batches that failed (the database away).",
    unit: "{batch}",
  }),
  processed: meter.createCounter("idemkit.processed_events", {
    description: "Deliveries handed to processOnce, by what it did with them.",
    unit: "{delivery}",
  }),
}));

/** The outbox's telemetry, for one relay or one `processOnce` call. */
export function outboxTelemetryOf(options: OutboxTelemetryOptions | false | undefined) {
  const instruments = () =>
    options === false ? undefined : instrumentsOf(options?.meterProvider ?? metrics.getMeterProvider());
  return {
    /** Counts and publishes what the relay reports. */
    relayEvent(event: RelayEvent): void {
      if (options === false) return;
      quietly(() => {
        const counted = instruments();
        if (event.type === "error") counted?.errors.add(1);
        else counted?.events.add(1, { "idemkit.result": event.type, "idemkit.topic": event.event.topic });
      });
      publishTo(channels.relay, () => withErrorSummary(event) as RelayMessage);
    },
    /** Records how long a published event waited since it was enqueued. */
    published(topic: string, lagMs: number): void {
      quietly(() => instruments()?.lag.record(lagMs / 1_000, { "idemkit.topic": topic }));
    },
    /** Counts and publishes what `processOnce` did with a delivery. */
    processed(delivery: Omit<ProcessedMessage, "error">, error?: unknown): void {
      if (options === false) return;
      quietly(() =>
        instruments()?.processed.add(1, { "idemkit.result": delivery.result, "idemkit.consumer": delivery.consumer }),
      );
      publishTo(channels.processOnce, (): ProcessedMessage => withErrorSummary({ ...delivery, error }));
    },
  };
}
