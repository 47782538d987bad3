/**
 * The shop in a process of its own, for the crash test: it serves on a free port, prints `LISTENING <url>`, and
 * holds every charge forever once the provider was called, printing `HOLDING`, so the test can SIGKILL it.
 */
import { serveFetch } from "@idemkit/testkit";
import { shop } from "./shop.js";
import { clientOf } from "./tables.js";

const app = shop(clientOf(String(process.env.DYNAMODB_ENDPOINT)), String(process.env.IDEMKIT_TABLE), {
  leaseMs: Number(process.env.IDEMKIT_LEASE_MS),
  hold: () => {
    console.log("HOLDING now");
    return new Promise<void>(() => {});
  },
});
const server = await serveFetch(app.handler);
console.log(`LISTENING ${server.url}`);
