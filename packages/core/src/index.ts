/**
 * The public surface of `@idemkit/core`: what apps (events, modes, errors, headers) and store authors (the store
 * contract, `replacement`, `memoryStore` as a model) rely on. The engine, fingerprints, key parsing and the retry
 * maths that idemkit's own packages share are at `@idemkit/core/internal`, with no promise of stability.
 */
export type { IdempotencyEvent } from "./engine.js";
export { IdempotencyEventType, IdempotencyMode } from "./engine.js";
export type { IdempotencyErrorOptions } from "./errors.js";
export {
  IdempotencyError,
  IdempotencyErrorCode,
  isIdempotencyError,
  isProcedureTransactionError,
  isRetryableCode,
  ProcedureTransactionError,
} from "./errors.js";
export { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, MAX_KEY_LENGTH } from "./key.js";
export { memoryStore } from "./memory-store.js";
export type { IdempotencyOutcomeAnswer } from "./outcome.js";
export type { RetryPolicy } from "./retry.js";
export type {
  AtomicCapability,
  AtomicSession,
  ClaimRequest,
  ClaimResult,
  DefaultModeOf,
  IdempotencyStore,
  LeaseStore,
  ModesOf,
  RecordId,
  StoredRecord,
  StoredResponse,
} from "./store.js";
export { isPurgeable, RecordState, replacement } from "./store.js";
