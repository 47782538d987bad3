/**
 * The store conformance suite on real Redis, with both clients: a single server, and a Cluster of three masters
 * (records land on every node; purge scans them all).
 */
import { describeStoreConformance } from "@idemkit/core/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { redisStore } from "../src/index.js";
import {
  CLIENTS,
  CLUSTER_CLIENTS,
  type ConnectedClient,
  connect,
  connectCluster,
  type RunningRedis,
  type RunningRedisCluster,
  startRedis,
  startRedisCluster,
} from "./clients.js";

let server: RunningRedis;
let cluster: RunningRedisCluster;
const clients = new Map<string, ConnectedClient>();
beforeAll(async () => {
  server = await startRedis();
  cluster = await startRedisCluster();
  for (const name of CLIENTS) clients.set(name, await connect(name, server.url));
  for (const name of CLUSTER_CLIENTS) clients.set(`${name} on a Cluster`, await connectCluster(name, cluster.urls));
});
afterAll(async () => {
  for (const { close } of clients.values()) await close();
  await server?.stop();
  await cluster?.stop();
});

for (const name of [...CLIENTS, ...CLUSTER_CLIENTS.map((client) => `${client} on a Cluster`)]) {
  describeStoreConformance(`redisStore on ${name}`, async () => ({
    store: redisStore({ client: (clients.get(name) as ConnectedClient).client, prefix: `conformance:${name}:` }),
  }));
}

it("spreads a Cluster's records over every master, each record whole on one", async () => {
  const store = redisStore({
    client: (clients.get("ioredis on a Cluster") as ConnectedClient).client,
    prefix: "spread:",
  });
  const now = Date.now();
  for (let index = 0; index < 30; index++) {
    const id = { scope: "alice", path: "orders.place", key: `spread-${index}` };
    await store.claim({ id, fingerprint: "fp", now, leaseExpiresAt: now + 60_000, expiresAt: now + 600_000 });
  }
  const perNode = await Promise.all(
    cluster.urls.map(async (url) => {
      const node = new Redis(url);
      try {
        return (await node.keys("spread:*")).length;
      } finally {
        node.disconnect();
      }
    }),
  );
  expect(perNode.every((count) => count > 0)).toBe(true);
  expect(perNode.reduce((sum, count) => sum + count, 0)).toBe(30);
});
