export type {
  ActionCommonOptions,
  ActionIdempotency,
  ActionRefusal,
  ActionTransformer,
  IdempotentAction,
  IdempotentActionOptions,
} from "./action.js";
export { idempotentAction, isActionRefusal } from "./action.js";
export { IDEMPOTENCY_KEY_FIELD, IdempotencyKeyField } from "./key-field.js";
