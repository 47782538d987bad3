/**
 * The DynamoDB store, for lease mode.
 *
 * @module @idemkit/dynamodb
 */

export type { DynamoStoreOptions } from "./store.js";
export { dynamoStore } from "./store.js";
export type { CreateTableOptions } from "./table.js";
export { createTable, tableDefinition } from "./table.js";
