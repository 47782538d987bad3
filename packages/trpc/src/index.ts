export type { IdempotencyErrorData } from "./errors.js";
export { idempotencyErrorData, toTRPCError } from "./errors.js";
export type { IdempotencyHttp } from "./http.js";
export { httpFromContext } from "./http.js";
export type { IdempotencyContext, IdempotencyOptions, IdempotencyTransformer } from "./middleware.js";
export { idempotency } from "./middleware.js";
