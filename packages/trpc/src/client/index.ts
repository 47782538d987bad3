export { isRetryableError, isStoredRefusal } from "./errors.js";
export type {
  IdempotencyCall,
  IdempotencyLinkOptions,
  IdempotencyOutcome,
  IdempotencyProgress,
  LinkClock,
} from "./link.js";
export { idempotencyContext, idempotencyLink } from "./link.js";
