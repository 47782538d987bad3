/**
 * Effects after the response: the outbox, its relay, and `processOnce` for consumers.
 *
 * @module @idemkit/outbox
 */
/** @deprecated Import it from `@idemkit/drizzle`, where it moved: it guards any Drizzle write, not the outbox's. */
export type { VersionedUpdate } from "@idemkit/drizzle";
/** @deprecated Import them from `@idemkit/drizzle`, where they moved: they guard any Drizzle write, not the outbox's. */
export { StaleVersionError, updateIfVersion } from "@idemkit/drizzle";
export type { Outbox, OutboxEventInput, OutboxOptions, OutboxTarget, PublishedEvent } from "./outbox.js";
export { createOutbox, OutboxKeyReusedError, OutboxPayloadError } from "./outbox.js";
export type { OutboxEventsTable, ProcessedEventsTable, PurgeOptions } from "./outbox-schema.js";
export { outboxEvents, outboxEventsTable, processedEvents, processedEventsTable } from "./outbox-schema.js";
export type { ProcessOnceOptions, ProcessOnceResult } from "./process-once.js";
export { processOnce, purgeProcessedEvents } from "./process-once.js";
export type { Relay, RelayBatch, RelayOptions } from "./relay.js";
export { createRelay, purgePublishedEvents, retryDeadEvents } from "./relay.js";
export type { SqlExecutor } from "./sql-executor.js";
export { sqlExecutor } from "./sql-executor.js";
export type { OutboxTelemetryOptions, ProcessedMessage, RelayEvent, RelayMessage } from "./telemetry.js";
