/**
 * Server Actions run once per user action: `idempotentAction` and the key field a form renders.
 *
 * @module @idemkit/next
 */
export type {
  ActionCommonOptions,
  ActionIdempotency,
  ActionTransformer,
  IdempotentAction,
  IdempotentActionOptions,
} from "./action.js";
export { idempotentAction } from "./action.js";
export type { ActionRefusal, ActionRefusalCode, SubmittedAction } from "./form-contract.js";
export { IDEMPOTENCY_KEY_FIELD, isActionRefusal, submittedValue, submittedValues } from "./form-contract.js";
export type { FormMessageCode, FormMessages } from "./form-messages.js";
export { IdempotencyKeyField } from "./key-field.js";
