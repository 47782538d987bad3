/**
 * `npm run bench:link`: what the client link costs. The same sequential order mutations go through tRPC's plain
 * `httpLink` (with a fresh key header, so the server does the same work) and through `idempotencyLink`, in
 * interleaved rounds against the demo's API on a real PostgreSQL, and the per-mutation times are printed side
 * by side with their ratio. Environment: DATABASE_URL (else a throwaway server), BENCH_MUTATIONS per round (400).
 */
import { createDatabase, serveFetch, startPostgres } from "@idemkit/testkit";
import { idempotencyLink } from "@idemkit/trpc/client";
import { createTRPCClient, httpLink } from "@trpc/client";
import superjson from "superjson";
import { openDatabase } from "../src/server/database";
import { type AppRouter, createHandler, createRouter } from "../src/server/router";

const MUTATIONS = Number(process.env.BENCH_MUTATIONS ?? 400);
const ROUNDS = 3;

const postgresServer = process.env.DATABASE_URL ? undefined : await startPostgres();
const created = await createDatabase(process.env.DATABASE_URL ?? postgresServer?.url ?? "");
const database = await openDatabase({ url: created.url });
const server = await serveFetch(createHandler(createRouter({ db: database.db })));
const url = `${server.url}/api/trpc`;

const clients = {
  "httpLink + key header": createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url,
        transformer: superjson,
        headers: () => ({ cookie: "uid=bench", "idempotency-key": crypto.randomUUID() }),
      }),
    ],
  }),
  idempotencyLink: createTRPCClient<AppRouter>({
    links: [idempotencyLink<AppRouter>({ url, transformer: superjson, headers: { cookie: "uid=bench" } })],
  }),
};
const input = { items: [{ sku: "tea", qty: 1 }] };
const totalMs = new Map<string, number>();

// Round 0 warms up the JIT, the pool and PostgreSQL's caches; it is not counted.
for (let round = 0; round <= ROUNDS; round++) {
  for (const [name, client] of Object.entries(clients)) {
    const startedAt = performance.now();
    for (let i = 0; i < MUTATIONS; i++) await client.checkout.placeOrder.mutate(input);
    if (round > 0) totalMs.set(name, (totalMs.get(name) ?? 0) + performance.now() - startedAt);
  }
}

const baselineMs = totalMs.get("httpLink + key header") ?? 1;
console.log(`${ROUNDS} rounds x ${MUTATIONS} sequential mutations per client\n`);
for (const [name, ms] of totalMs) {
  const perMutation = (ms / (ROUNDS * MUTATIONS)).toFixed(3);
  console.log(`${name.padEnd(24)} ${perMutation} ms/mutation   ${(baselineMs / ms).toFixed(2)}x`);
}

await server.close();
await database.close();
await created.drop();
await postgresServer?.stop();
