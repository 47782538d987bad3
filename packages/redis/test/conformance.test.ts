import { describeStoreConformance } from "@idemkit/core/testing";
import { afterAll, beforeAll } from "vitest";
import { redisStore } from "../src/index.js";
import { CLIENTS, type ConnectedClient, connect, type RunningRedis, startRedis } from "./clients.js";

let server: RunningRedis;
const clients = new Map<string, ConnectedClient>();
beforeAll(async () => {
  server = await startRedis();
  for (const name of CLIENTS) clients.set(name, await connect(name, server.url));
});
afterAll(async () => {
  for (const { close } of clients.values()) await close();
  await server?.stop();
});

for (const name of CLIENTS) {
  describeStoreConformance(`redisStore on ${name}`, async () => ({
    store: redisStore({ client: (clients.get(name) as ConnectedClient).client, prefix: `conformance:${name}:` }),
  }));
}
