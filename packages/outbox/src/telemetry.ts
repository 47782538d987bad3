/**
 * What an operator sees of effects after the response: the relay's events published, failed (to be retried), dead
 * and taken over, by topic; how long an event waited between its enqueue and its publication (the lag); and each
 * consumer's deliveries processed once or skipped as duplicates. OpenTelemetry through `@opentelemetry/api` (a no-op
 * until the app registers an SDK), and the channels `idemkit:relay` (each `RelayEvent`) and `idemkit:process-once`.
 * The channels carry neither an event's payload nor an error's message unless `include` says so.
 *
 * | name                         | kind          | attributes                                             |
 * |------------------------------|---------------|--------------------------------------------------------|
 * | `idemkit.outbox.events`      | counter       | `idemkit.result` (published, failed, dead, lease_lost), `idemkit.topic` |
 * | `idemkit.outbox.lag`         | histogram (s) | `idemkit.topic`                                        |
 * | `idemkit.outbox.errors`      | counter       | (a batch that failed: the database away)               |
 * | `idemkit.processed_events`   | counter       | `idemkit.result` (processed, duplicate, failed), `idemkit.consumer` |
 *
 * A topic or a consumer is named while its meter provider knows fewer than `MAX_SERIES_VALUES` of them; later ones
 * share one series each way, marked `otel.metric.overflow`.
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
import type { PublishedEvent } from "./outbox.js";

/**
 * Where the outbox's metrics go (the global meter provider by default, or this one; false for none, the channels
 * too), and what of the app's own data its channels carry.
 */
export interface OutboxTelemetryOptions {
  meterProvider?: MeterProvider;
  /**
   * What channel messages carry of the app's own data, which may be personal or secret (an order's address, a
   * broker's URL in its error), and which anyone subscribed to a channel would see. Each is off by default; metrics
   * never carry either.
   */
  include?: {
    /** `idemkit:relay` messages carry the event's `payload`. Default false. */
    payloads?: boolean;
    /**
     * Errors on `idemkit:relay` and `idemkit:process-once` carry their `message`. Default false: an error is told by
     * its name and code alone.
     */
    errorMessages?: boolean;
  };
}

/** What `idemkit:process-once` subscribers get, once per delivery. */
export interface ProcessedMessage {
  consumer: string;
  eventId: string;
  result: "processed" | "duplicate" | "failed";
  /** For a failed delivery: what the handler threw. */
  error?: ErrorSummary;
}

/** An event as `idemkit:relay` tells of it: its payload only with `include: { payloads: true }`. */
export type RelayedEvent = Omit<PublishedEvent, "payload"> & { payload?: unknown };

/** What the relay reports, for logs and metrics. */
export type RelayEvent =
  | { type: "published"; event: PublishedEvent }
  | { type: "failed"; event: PublishedEvent; error: unknown; retryAt: number }
  | { type: "dead"; event: PublishedEvent; error: unknown }
  /** The event's lease ended before this relay marked it: another relay may publish it again. */
  | { type: "lease_lost"; event: PublishedEvent }
  | { type: "error"; error: unknown };

/**
 * What `idemkit:relay` subscribers get: each `RelayEvent`, its event as a `RelayedEvent` and its error summed up (a
 * copy, never the error itself).
 */
export type RelayMessage = {
  [T in RelayEvent["type"]]: RelayedAs<Extract<RelayEvent, { type: T }>>;
}[RelayEvent["type"]];
/** One kind of `RelayEvent` as its message has it. */
type RelayedAs<E> = { [K in Exclude<keyof E, "error">]: K extends "event" ? RelayedEvent : E[K] } & {
  error?: ErrorSummary;
};

const channels = { relay: channelNamed("idemkit:relay"), processOnce: channelNamed("idemkit:process-once") };

const instrumentsOf = instrumentsPer("@idemkit/outbox", (meter, bounded) => ({
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
  topics: bounded(
    "idemkit.topic",
    "A topic names a kind of event (`order.placed`): an id in it belongs in the event's key or payload.",
  ),
  consumers: bounded(
    "idemkit.consumer",
    "A consumer names a handler (`send-confirmation`): an id in it belongs in the event id.",
  ),
}));

/** `event` as a channel tells of it by default. */
function withoutPayload({ payload, ...event }: PublishedEvent): RelayedEvent {
  return event;
}

/** The outbox's telemetry, for one relay or one `processOnce` call. */
export function outboxTelemetryOf(options: OutboxTelemetryOptions | false | undefined) {
  const instruments = () =>
    options === false ? undefined : instrumentsOf(options?.meterProvider ?? metrics.getMeterProvider());
  const { include = {} } = options || {};
  const withErrorMessages = include.errorMessages === true;
  return {
    /** Counts and publishes what the relay reports. */
    relayEvent(event: RelayEvent): void {
      if (options === false) return;
      quietly(() => {
        const counted = instruments();
        if (event.type === "error") counted?.errors.add(1);
        else {
          const topic = counted?.topics.attributesOf(event.event.topic);
          counted?.events.add(1, { "idemkit.result": event.type, ...topic });
        }
      });
      publishTo(channels.relay, () => {
        const told =
          "event" in event && include.payloads !== true ? { ...event, event: withoutPayload(event.event) } : event;
        return withErrorSummary(told, withErrorMessages) as RelayMessage;
      });
    },
    /** Records how long a published event waited since it was enqueued. */
    published(topic: string, lagMs: number): void {
      quietly(() => {
        const counted = instruments();
        counted?.lag.record(lagMs / 1_000, counted.topics.attributesOf(topic));
      });
    },
    /** Counts and publishes what `processOnce` did with a delivery. */
    processed(delivery: Omit<ProcessedMessage, "error">, error?: unknown): void {
      if (options === false) return;
      quietly(() => {
        const counted = instruments();
        const consumer = counted?.consumers.attributesOf(delivery.consumer);
        counted?.processed.add(1, { "idemkit.result": delivery.result, ...consumer });
      });
      publishTo(
        channels.processOnce,
        (): ProcessedMessage => withErrorSummary({ ...delivery, error }, withErrorMessages),
      );
    },
  };
}
