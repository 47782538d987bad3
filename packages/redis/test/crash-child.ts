/**
 * The shop in a process of its own, for the crash test: it serves on a free port, prints `LISTENING <url>`, and
 * holds every charge forever once the provider was called, printing `HOLDING <key>`, so the test can SIGKILL it.
 */
import { serveFetch } from "@idemkit/testkit";
import { connect } from "./clients.js";
import { shop } from "./shop.js";

const { client } = await connect("node-redis", String(process.env.REDIS_URL));
const app = shop(client, {
  prefix: String(process.env.IDEMKIT_PREFIX),
  leaseMs: Number(process.env.IDEMKIT_LEASE_MS),
  hold: (key) => {
    console.log(`HOLDING ${key}`);
    return new Promise<void>(() => {});
  },
});
const server = await serveFetch(app.handler);
console.log(`LISTENING ${server.url}`);
