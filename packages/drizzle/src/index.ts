/**
 * The PostgreSQL store on Drizzle: `drizzleStore`, its table, purging, and `updateIfVersion`.
 *
 * @module @idemkit/drizzle
 */

export type { AnyPgDatabase } from "./database.js";
export type { IdempotencyKeysTable } from "./schema.js";
export { idempotencyKeys, idempotencyKeysTable } from "./schema.js";
export type { DrizzleStore, DrizzleStoreOptions } from "./store.js";
export { drizzleStore } from "./store.js";
export type { TransactionOf } from "./transaction.js";
export type { VersionedUpdate } from "./versioned-update.js";
export { StaleVersionError, updateIfVersion } from "./versioned-update.js";
