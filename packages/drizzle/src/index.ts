export type { IdempotencyKeysTable } from "./schema.js";
export { idempotencyKeys, idempotencyKeysTable } from "./schema.js";
export type { DrizzleStore, DrizzleStoreOptions, TransactionOf } from "./store.js";
export { drizzleStore } from "./store.js";
