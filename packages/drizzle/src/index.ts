export { idempotencyKeys } from "./schema.js";
export type { DrizzleStore, DrizzleStoreOptions, TransactionOf } from "./store.js";
export { drizzleStore } from "./store.js";
