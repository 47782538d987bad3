/**
 * The fixture app in a process of its own, for the crash tests: it serves on a free port, prints
 * `LISTENING <url>`, and holds every placeOrder call forever after its insert, printing `HOLDING <key>`, so the
 * test can kill it with SIGKILL mid-request.
 */
import { serveFetch } from "@idemkit/testkit";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { createApp } from "./app.js";

const client = postgres(String(process.env.DATABASE_URL), { max: 4 });
const app = createApp({
  db: drizzle(client),
  mode: process.env.IDEMKIT_MODE === "lease" ? "lease" : "atomic",
  leaseMs: Number(process.env.IDEMKIT_LEASE_MS ?? 60_000),
  hold: (key) => {
    console.log(`HOLDING ${key}`);
    return new Promise<void>(() => {});
  },
});
const server = await serveFetch(app.handler);
console.log(`LISTENING ${server.url}`);
