/**
 * A throwaway Redis server per test file, and the two clients the store supports connected to it, set up as the
 * store's docs say (commands fail at once while Redis is away instead of queueing).
 */
import { type RunningRedis, startRedis } from "@idemkit/testkit";
import { Redis } from "ioredis";
import { createClient } from "redis";
import type { RedisClient } from "../src/index.js";

export interface ConnectedClient {
  client: RedisClient;
  close(): Promise<void>;
}

export type ClientName = "node-redis" | "ioredis";
export const CLIENTS: ClientName[] = ["node-redis", "ioredis"];

export async function connect(name: ClientName, url: string): Promise<ConnectedClient> {
  if (name === "node-redis") {
    const client = createClient({ url, disableOfflineQueue: true });
    client.on("error", () => {}); // reconnects by itself; each command in the meantime fails and says why
    await client.connect();
    return { client, close: async () => void client.destroy() };
  }
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true });
  client.on("error", () => {});
  await client.connect();
  return { client, close: async () => void client.disconnect() };
}

export type { RunningRedis };
export { startRedis };
