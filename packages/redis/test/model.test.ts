/** The contract's model against the engine over the Redis store (lease mode, its only one), on a real redis-server. */
import { IdempotencyMode } from "@idemkit/core";
import { describeContractModel } from "@idemkit/testkit";
import { afterAll, beforeAll } from "vitest";
import { redisStore } from "../src/index.js";
import { type ConnectedClient, connect, type RunningRedis, startRedis } from "./clients.js";

let server: RunningRedis;
let connected: ConnectedClient;
beforeAll(async () => {
  server = await startRedis();
  connected = await connect("node-redis", server.url);
});
afterAll(async () => {
  await connected?.close();
  await server?.stop();
});

describeContractModel("redisStore", {
  modes: [IdempotencyMode.LEASE],
  open: () => ({ store: redisStore({ client: connected.client, prefix: `model:${globalThis.crypto.randomUUID()}:` }) }),
});
