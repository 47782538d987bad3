export type {
  ActionCommonOptions,
  ActionIdempotency,
  ActionTransformer,
  IdempotentAction,
  IdempotentActionOptions,
} from "./action.js";
export { idempotentAction } from "./action.js";
export { IdempotencyKeyField } from "./key-field.js";
export type { ActionRefusal, ActionRefusalCode, SubmittedAction } from "./wire.js";
export { IDEMPOTENCY_KEY_FIELD, isActionRefusal, submittedValue, submittedValues } from "./wire.js";
