/**
 * The client side of idemkit's Server Actions: `useIdempotentActionState`, React's `useActionState` with one key per
 * user action, for the Client Component that renders an `idempotentAction`'s form.
 *
 * @module @idemkit/next/client
 */
"use client";
export type { KeyStorage, RetryPolicy } from "@idemkit/core/client";
export { ActionKeyField } from "./client/action-key-field.js";
export type {
  IdempotentFormAction,
  UseIdempotentActionStateOptions,
} from "./client/use-idempotent-action-state.js";
export { useIdempotentActionState } from "./client/use-idempotent-action-state.js";
export type { ActionRefusal, ActionRefusalCode, SubmittedAction } from "./form-contract.js";
export { IDEMPOTENCY_KEY_FIELD, isActionRefusal, submittedValue, submittedValues } from "./form-contract.js";
export type { FormMessageCode, FormMessages } from "./form-messages.js";
