/**
 * A throwaway Redis server per test file, and the two clients the store supports connected to it, set up as the
 * store's docs say (commands fail at once while Redis is away instead of queueing).
 */
import { type RunningRedis, type RunningRedisCluster, startRedis, startRedisCluster } from "@idemkit/testkit";
import { Cluster, Redis } from "ioredis";
import { createClient, createCluster } from "redis";
import type { RedisClient } from "../src/index.js";

export interface ConnectedClient {
  client: RedisClient;
  close(): Promise<void>;
}

/**
 * The two clients; and ioredis as an app may set it up, with a key prefix of its own and integers answered as
 * strings (the store must read its replies and scan its keys through both).
 */
export type ClientName = "node-redis" | "ioredis" | "ioredis (keyPrefix, stringNumbers)";
export const CLIENTS: ClientName[] = ["node-redis", "ioredis", "ioredis (keyPrefix, stringNumbers)"];
export const CLUSTER_CLIENTS: ClientName[] = ["node-redis", "ioredis"];

export async function connect(name: ClientName, url: string): Promise<ConnectedClient> {
  if (name === "node-redis") {
    const client = createClient({ url, disableOfflineQueue: true });
    client.on("error", () => {}); // reconnects by itself; each command in the meantime fails and says why
    await client.connect();
    return { client, close: async () => void client.destroy() };
  }
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    lazyConnect: true,
    ...(name !== "ioredis" && { keyPrefix: "app:", stringNumbers: true }),
  });
  client.on("error", () => {});
  await client.connect();
  return { client, close: async () => void client.disconnect() };
}

/** The same two clients, as Cluster clients seeded with every master. */
export async function connectCluster(name: ClientName, urls: string[]): Promise<ConnectedClient> {
  if (name === "node-redis") {
    const cluster = createCluster({
      rootNodes: urls.map((url) => ({ url })),
      defaults: { disableOfflineQueue: true },
    });
    cluster.on("error", () => {});
    await cluster.connect();
    return { client: cluster, close: async () => void cluster.destroy() };
  }
  const cluster = new Cluster(
    urls.map((url) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) })),
    { enableOfflineQueue: false, lazyConnect: true, redisOptions: { maxRetriesPerRequest: 0 } },
  );
  cluster.on("error", () => {});
  await cluster.connect();
  return { client: cluster, close: async () => void cluster.disconnect() };
}

export type { RunningRedis, RunningRedisCluster };
export { startRedis, startRedisCluster };
