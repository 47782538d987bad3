/**
 * The client links: one key per mutation, sent again with it while its answer is lost.
 *
 * @module @idemkit/trpc/client
 */
export type { RetryPolicy } from "@idemkit/core/client";
export { isRetryableError, isStoredRefusal, mayHaveRun, nextStepAfter } from "./errors.js";
export { idempotencyHeaders, KeyedBatchError } from "./headers.js";
export type { IdempotencyLinkOptions } from "./link.js";
export { idempotencyLink } from "./link.js";
export type {
  IdempotencyCall,
  IdempotencyOutcome,
  IdempotencyProgress,
  IdempotencyRetryLinkOptions,
  LinkClock,
} from "./retry-link.js";
export { idempotencyContext, idempotencyRetryLink } from "./retry-link.js";
