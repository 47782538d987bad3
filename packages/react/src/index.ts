/**
 * `useIdempotentMutation`: one key per user action on TanStack Query, for `@trpc/tanstack-react-query`'s procedures.
 *
 * @module @idemkit/react
 */
export type { IdempotencyOutcomeAnswer, KeyStorage, OutcomeLookup } from "@idemkit/core/client";
export type { IdempotentMutationState } from "./action-result.js";
export {
  type IdempotentMutationDefaultsOptions,
  idempotentMutationDefaults,
} from "./mutation-defaults.js";
export { ownOnMutateResult } from "./mutation-key-context.js";
export type { IdempotentActionOptions, IdempotentMutationKeyOptions } from "./mutation-options.js";
export { ActionInFlightError } from "./mutation-options.js";
export type { UseIdempotentMutationOptions, UseIdempotentMutationResult } from "./use-idempotent-mutation.js";
export { useIdempotentMutation } from "./use-idempotent-mutation.js";
