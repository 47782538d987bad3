/**
 * What idemkit's own packages share and apps should not import: canonical JSON, what is plain JSON, the one
 * classification of answers and the client's retry maths. Names and signatures here may change in any release; the engine, fingerprints and
 * key parsing are public, in `@idemkit/core`.
 */

export type { PressContext, PressOutcome } from "./client/action-policy.js";
export { continuedAction, press } from "./client/action-policy.js";
export type { Action, ActionStore, KeyStorage } from "./client/action-store.js";
export {
  actionFingerprint,
  actionStore,
  chosenStorage,
  defaultStorage,
  defaultStorageName,
  holdStorageName,
  storageWhileHeld,
} from "./client/action-store.js";
export { browserStorage } from "./client/browser-storage.js";
export type { OutcomeLookup } from "./client/outcome-polling.js";
export { DEFAULT_LOOKUP_MAX_RUNNING_MS, settledOutcome } from "./client/outcome-polling.js";
export type { TabIdentity } from "./client/tab-identity.js";
export { knownTab, thisTab, webLocks } from "./client/tab-identity.js";
export { checkedScope, idempotencyContextOf } from "./context.js";
export { isSealedBody } from "./encrypted-store.js";
export { causeChain } from "./errors.js";
export { canonicalJson } from "./fingerprint.js";
export { downstreamKey } from "./key.js";
export type { Channel } from "./observing.js";
export {
  channelNamed,
  type ErrorSummary,
  instrumentsPer,
  publishTo,
  quietly,
  withErrorSummary,
} from "./observing.js";
export type { OnceLog } from "./operator-detail.js";
export { onceLog } from "./operator-detail.js";
export type { AnswerSeen, LookupOptions, RecordOutcome } from "./outcome.js";
export { isRetryableAnswer, isStoredStatus, lookUpOutcome } from "./outcome.js";
export { MAX_PLAIN_JSON_DEPTH, type NotPlainJson, notPlainJson, type PlainJsonOptions } from "./plain-json.js";
export type { RetryState } from "./retry.js";
export {
  abortableDelay,
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  newIdempotencyKey,
  nextRetryDelayMs,
  parseRetryAfterMs,
} from "./retry.js";
export { sha256Hex } from "./sha256.js";
export { DEFAULT_WAIT_MS } from "./store.js";
