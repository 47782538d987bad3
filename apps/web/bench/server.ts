/**
 * The benchmark's server process: the demo's checkout API over node:http, plus the same order writes without
 * protection, so both run through identical HTTP, tRPC and database code. Prints `LISTENING <url>`.
 *
 *   checkout.placeOrder          protected (atomic mode), replay cache on (the default)
 *   bench.placeOrderNoCache      protected, replay cache off: every replay reads PostgreSQL
 *   bench.placeOrderUnprotected  the same writes (order, lines, payment) in a plain transaction
 *   bench.noop / noopUnprotected a procedure that does nothing, protected (replayed from the cache) and not: the floor
 *                                that tRPC and HTTP set, which a cached replay should add nothing to
 *   bench.slowOrder              placeOrder's writes, then `holdMs` more inside its transaction: a call slow enough
 *                                for a storm of duplicates to gather behind it (bench:scale)
 *   bench.leaseOrderPostgres     placeOrderUnprotected's writes in lease mode, keys in PostgreSQL (drizzleStore)
 *   bench.leaseOrderRedis        the same in lease mode, keys in Redis at REDIS_URL (redisStore); both without
 *                                the replay cache, so a replay reads the store
 */
import { drizzleStore } from "@idemkit/drizzle";
import { redisStore } from "@idemkit/redis";
import { serveFetch } from "@idemkit/testkit";
import { idempotency } from "@idemkit/trpc";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { createClient } from "redis";
import superjson from "superjson";
import { z } from "zod";
import { createHandler, createRouter, placeOrderInput, t, writeOrder } from "../src/server/router";

const client = postgres(String(process.env.DATABASE_URL), { max: Number(process.env.BENCH_POOL ?? 10) });
const db = drizzle(client);
const app = createRouter({ db });
const uncached = createRouter({ db, replayCacheSize: 0 });
const idempotent = t.procedure.use(
  idempotency({ store: drizzleStore({ db }), transformer: superjson, scope: ({ ctx }) => ctx.userId ?? "bench" }),
);
const redis = await createClient({ url: String(process.env.REDIS_URL), disableOfflineQueue: true }).connect();
const leased = (store: Parameters<typeof idempotency>[0]["store"]) =>
  t.procedure
    .use(
      idempotency({
        store,
        mode: "lease",
        replayCacheSize: 0,
        transformer: superjson,
        scope: ({ ctx }) => ctx.userId ?? "bench",
      }),
    )
    .input(placeOrderInput)
    .mutation(({ ctx, input }) =>
      db.transaction((tx) => writeOrder(tx, ctx.userId ?? "bench", input.items, ctx.idempotency.subKey("payment"))),
    );
const router = t.mergeRouters(
  app,
  t.router({
    bench: t.router({
      placeOrderNoCache: uncached.checkout.placeOrder,
      /** CPU time this process has used, in ms: the bench divides its growth by the requests served. */
      cpuMs: t.procedure.query(() => {
        const { user, system } = process.cpuUsage();
        return (user + system) / 1_000;
      }),
      noop: idempotent.mutation(() => ({ ok: true })),
      noopUnprotected: t.procedure.mutation(() => ({ ok: true })),
      placeOrderUnprotected: t.procedure
        .input(placeOrderInput)
        .mutation(({ ctx, input }) =>
          db.transaction((tx) => writeOrder(tx, ctx.userId ?? "bench", input.items, globalThis.crypto.randomUUID())),
        ),
      leaseOrderPostgres: leased(drizzleStore({ db })),
      leaseOrderRedis: leased(redisStore({ client: redis })),
      slowOrder: idempotent
        .input(placeOrderInput.extend({ holdMs: z.number().int().min(0).max(10_000) }))
        .mutation(async ({ ctx, input }) => {
          const userId = ctx.userId ?? "bench";
          const order = await writeOrder(ctx.idempotency.tx, userId, input.items, ctx.idempotency.subKey("payment"));
          await new Promise((resolve) => setTimeout(resolve, input.holdMs));
          return order;
        }),
    }),
  }),
);
const server = await serveFetch(createHandler(router));
console.log(`LISTENING ${server.url}`);

// Exit through process.exit so that profilers (--cpu-prof) and pools get to finish.
process.once("SIGTERM", async () => {
  await server.close();
  await client.end({ timeout: 1 });
  redis.destroy();
  process.exit(0);
});
