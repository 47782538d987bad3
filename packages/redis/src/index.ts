/**
 * The Redis store, for lease mode.
 *
 * @module @idemkit/redis
 */
export type { IoRedisClient, NodeRedisClient, RedisClient } from "./client.js";
export type { RedisStoreOptions } from "./store.js";
export { redisStore } from "./store.js";
