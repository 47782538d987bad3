/**
 * What idemkit's own packages share and apps should not import: what is plain JSON, the one classification of
 * answers, how a context and its scope are read, observing. The browser side is at `@idemkit/core/client`. Names and signatures here may change in any release; the engine, fingerprints and
 * key parsing are public, in `@idemkit/core`.
 */

export { checkedScope, idempotencyContextOf } from "./context.js";
export { isSealedBody } from "./encrypted-store.js";
export { causeChain } from "./errors.js";
export { refusalHeaders } from "./http-status.js";
export { downstreamKey } from "./key.js";
export { checkedNumber, isLimited, type NumericRule } from "./numeric-options.js";
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
export type { LookupOptions, RecordOutcome } from "./outcome.js";
export { lookUpOutcome } from "./outcome.js";
export { MAX_PLAIN_JSON_DEPTH, type NotPlainJson, notPlainJson, type PlainJsonOptions } from "./plain-json.js";
export { isStoredStatus } from "./resend.js";
export { sha256Hex } from "./sha256.js";
export { DEFAULT_WAIT_MS } from "./store.js";
