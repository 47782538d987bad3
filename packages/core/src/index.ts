/**
 * The public surface of `@idemkit/core`, under semver: the engine (creating it, its options and events), the
 * contract every side reads (errors and the resend rule, headers, key parsing, fingerprints, modes) and the store's
 * face (`IdempotencyStore`, with `memoryStore` as its model and `encryptedStore` around any). Beside it, each for
 * whom it is written: what an adapter is built from at `@idemkit/core/adapter`, the Fetch adapter at
 * `@idemkit/core/fetch`, a store author's contract and helpers at `@idemkit/core/store`, what the diagnostics
 * channels carry at `@idemkit/core/telemetry`, the conformance suites at `@idemkit/core/testing`. What idemkit's
 * own packages share beyond that (the browser side at `@idemkit/core/client`, the rest at `@idemkit/core/internal`)
 * makes no such promise.
 *
 * @module @idemkit/core
 */

export type { IdempotencyContext } from "./context.js";
export type { AnswerKeys } from "./encrypted-store.js";
export { encryptedStore } from "./encrypted-store.js";
export { CallOutcome } from "./engine/call-outcome.js";
export type { CallLimits } from "./engine/limits.js";
export type { IdempotencyEngineOptions, IdempotencyEvent, TelemetryOptions } from "./engine/types.js";
export { IdempotencyEventType, IdempotencyMode } from "./engine/types.js";
export type { IdempotencyEngine } from "./engine.js";
export { createIdempotencyEngine } from "./engine.js";
export type { IdempotencyErrorOptions } from "./errors.js";
export {
  IdempotencyError,
  IdempotencyErrorCode,
  isIdempotencyError,
  isProcedureTransactionError,
  ProcedureTransactionError,
  Resend,
  resendOf,
  TransactionBypassError,
  transactionBypassIn,
} from "./errors.js";
export type { FingerprintOptions } from "./fingerprint.js";
export { fingerprint, fingerprintAsync } from "./fingerprint.js";
export { httpStatusOf, IDEMPOTENT_RESEND_HEADER } from "./http-status.js";
export { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, MAX_KEY_LENGTH, parseIdempotencyKey } from "./key.js";
export { memoryStore } from "./memory-store.js";
export type { AnswerSeen, NextStep } from "./resend.js";
export { nextStep, nextStepAfterRefusal } from "./resend.js";
export type { IdempotencyStore, ModeTransaction, RecordId, StoredResponse } from "./store.js";
