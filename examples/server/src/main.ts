/**
 * Runs the example checkout API on http://127.0.0.1:$PORT/api/trpc (default port 3000). Try it:
 *
 *   curl -s localhost:3000/api/trpc/checkout.placeOrder -H 'content-type: application/json' \
 *     -H "idempotency-key: $(uuidgen)" -H 'x-user: ada' -d '{"json":{"items":[{"sku":"tea","qty":2}]}}'
 *
 * Send the same command twice with the same key: the second answer is replayed (`Idempotent-Replayed: true`).
 */
import { serveFetch } from "@idemkit/testkit";
import { openDatabase } from "./database.js";
import { createHandler, createRouter } from "./router.js";

const port = Number(process.env.PORT ?? 3000);
const database = await openDatabase({ url: process.env.DATABASE_URL });
const server = await serveFetch(createHandler(createRouter({ db: database.db })), port);
console.log(`idemkit example: checkout API on ${server.url}/api/trpc (${database.description})`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    await server.close();
    await database.close();
    process.exit(0);
  });
}
