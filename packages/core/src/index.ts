/**
 * The public surface of `@idemkit/core`, under semver: the engine that adapters are built on (creating it, running
 * one request, its options and events), fingerprints and key parsing; what apps rely on (modes, errors, headers);
 * and the store contract, with `memoryStore` as its model. The Fetch adapter is at `@idemkit/core/fetch`, a store
 * author's helpers at `@idemkit/core/store`, the conformance suites at `@idemkit/core/testing`. What idemkit's own
 * packages share beyond that is at `@idemkit/core/internal`, with no such promise.
 *
 * @module @idemkit/core
 */

export type { KeyStorage } from "./client/action-store.js";
export type { OutcomeLookup } from "./client/outcome-polling.js";
export type { RetryPolicy } from "./client/retryer.js";
export type { IdempotencyContext } from "./context.js";
export type { AnswerKeys } from "./encrypted-store.js";
export { encryptedStore } from "./encrypted-store.js";
export type { CallMessage, EventMessage } from "./engine/call-outcome.js";
export { CallOutcome } from "./engine/call-outcome.js";
export type { CallLimits } from "./engine/limits.js";
export type {
  AdapterOptions,
  AtomicModeOptions,
  Execution,
  IdempotencyEngineOptions,
  IdempotencyEvent,
  IdempotentRequest,
  LeaseModeOptions,
  ModeOptions,
  RunResult,
  Settlement,
  TelemetryOptions,
} from "./engine/types.js";
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
export type { ErrorSummary } from "./observing.js";
export type { IdempotencyOutcomeAnswer } from "./outcome.js";
export type { AnswerSeen, NextStep } from "./resend.js";
export { nextStep, nextStepAfterRefusal } from "./resend.js";
export type {
  AtomicCapability,
  AtomicSession,
  ClaimRequest,
  ClaimResult,
  DefaultModeOf,
  IdempotencyStore,
  LeaseStore,
  ModesOf,
  ModeTransaction,
  RecordId,
  StoredRecord,
  StoredResponse,
} from "./store.js";
