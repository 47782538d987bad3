/**
 * The tRPC middleware: `idempotency()` on mutation procedures, errors for clients, the outcome lookup, keys for server-side callers.
 *
 * @module @idemkit/trpc
 */
export type { IdempotencyContext } from "@idemkit/core";
export type { IdempotencyOutcomeAnswer } from "@idemkit/core/client";
export type { IdempotencyErrorData, IdempotencyErrorShape } from "./errors.js";
export { idempotencyErrorData, idempotencyErrors, toTRPCError } from "./errors.js";
export type { IdempotencyHttp } from "./http.js";
export { httpFromContext, withIdempotencyKey } from "./http.js";
export type { IdempotencyOptions } from "./middleware.js";
export { idempotency } from "./middleware.js";
export type {
  OutcomeLookupInput,
  OutcomeLookupOptions,
  OutcomeLookupSettings,
  OutcomeScope,
} from "./outcome-lookup.js";
export { outcomeLookup, outcomeLookupInput } from "./outcome-lookup.js";
export type { IdempotencyTransformer } from "./stored-body.js";
