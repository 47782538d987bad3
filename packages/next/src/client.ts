"use client";
/**
 * The client side of idemkit's Server Actions: `useIdempotentActionState`, React's `useActionState` with one key per
 * user action, for the Client Component that renders an `idempotentAction`'s form.
 */
export type {
  IdempotentFormAction,
  UseIdempotentActionStateOptions,
} from "./client/use-idempotent-action-state.js";
export { useIdempotentActionState } from "./client/use-idempotent-action-state.js";
export type { ActionRefusal, ActionRefusalCode } from "./wire.js";
export { IDEMPOTENCY_KEY_FIELD, isActionRefusal } from "./wire.js";
