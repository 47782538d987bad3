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
 *   bench.leaseOrderRedis        the same in lease mode, keys in Redis at REDIS_URL (redisStore). Only when
 *                                REDIS_URL is set.
 *   bench.leaseOrderDynamo       the same in lease mode, keys in DynamoDB at DYNAMODB_ENDPOINT, in the table
 *                                BENCH_DYNAMODB_TABLE (dynamoStore). Only when both are set. The lease stores run
 *                                without the replay cache, so a replay reads the store.
 *   bench.placeOrderAtomic       placeOrderUnprotected's writes protected in atomic mode, nothing else (the demo's
 *                                checkout.placeOrder also enqueues its confirmation in the outbox)
 *   bench.placeOrderHandWritten  the floor of exactly-once: placeOrderUnprotected's writes made idempotent by hand,
 *                                the least a correct design does (see handWrittenOrder)
 *   bench.placeOrderIdemkitSql   the same by hand, with idemkit's own statements instead (see idemkitSqlOrder): what
 *                                its statements cost without its engine
 */
import { createHash } from "node:crypto";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { drizzleStore, idempotencyKeys } from "@idemkit/drizzle";
import { claimSavepoint, driverOf, run, statementsFor } from "@idemkit/drizzle/internal";
import { dynamoStore } from "@idemkit/dynamodb";
import { redisStore } from "@idemkit/redis";
import { serveFetch } from "@idemkit/testkit";
import { idempotency } from "@idemkit/trpc";
import { TRPCError } from "@trpc/server";
import { and, eq } from "drizzle-orm";
import { drizzle as drizzleNodePostgres } from "drizzle-orm/node-postgres";
import { drizzle } from "drizzle-orm/postgres-js";
import pg from "pg";
import postgres from "postgres";
import postgres4 from "postgres4";
import { createClient } from "redis";
import superjson from "superjson";
import { z } from "zod";
import type { Database } from "../src/server/database";
import { createHandler, createRouter, type OrderItem, placeOrderInput, t, writeOrder } from "../src/server/router";

/** The bench's database on `driver`: the same Drizzle API whichever it is, so every scenario runs unchanged. */
function openBenchDatabase(
  url: string,
  { driver, max, prepare }: { driver: string; max: number; prepare: boolean },
): { db: Database; close(): Promise<void> } {
  if (driver === "node-postgres") {
    const pool = new pg.Pool({ connectionString: url, max });
    return { db: drizzleNodePostgres(pool) as unknown as Database, close: () => pool.end() };
  }
  if (driver === "postgres.js 4") {
    const client = postgres4(url, { max, prepare });
    return { db: drizzle(client as never) as unknown as Database, close: () => client.end({ timeout: 1 }) };
  }
  if (driver !== "postgres.js 3") throw new Error(`BENCH_DRIVER: no driver ${driver}`);
  const client = postgres(url, { max, prepare });
  return { db: drizzle(client), close: () => client.end({ timeout: 1 }) };
}

const { db, close } = openBenchDatabase(String(process.env.DATABASE_URL), {
  driver: process.env.BENCH_DRIVER ?? "postgres.js 3",
  max: Number(process.env.BENCH_POOL ?? 10),
  // BENCH_PREPARE=false: as behind a transaction pooler (postgres.js's option; node-postgres prepares only by name).
  prepare: process.env.BENCH_PREPARE !== "false",
});
/** The savepoint behind the claim, sent as idemkit sends it (in the claim's text where postgres.js sends literals). */
const savepoint = claimSavepoint(driverOf(db as never));
const app = createRouter({ db });
const uncached = createRouter({ db, replayCacheSize: 0 });
const idempotent = t.procedure.use(
  idempotency({ store: drizzleStore({ db }), transformer: superjson, scope: ({ ctx }) => ctx.userId ?? "bench" }),
);
const redis = process.env.REDIS_URL
  ? await createClient({ url: process.env.REDIS_URL, disableOfflineQueue: true }).connect()
  : undefined;
const dynamoTable = process.env.BENCH_DYNAMODB_TABLE;
const dynamo =
  process.env.DYNAMODB_ENDPOINT && dynamoTable
    ? new DynamoDBClient({
        endpoint: process.env.DYNAMODB_ENDPOINT,
        region: "us-east-1",
        credentials: { accessKeyId: "bench", secretAccessKey: "bench" },
      })
    : undefined;
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
/**
 * An order made exactly-once by hand, in the procedure's own transaction, as a careful engineer would without a
 * library: the claim is an insert that does nothing on conflict (a duplicate waits on the row's lock, then finds it
 * taken), the answer is written by an update before commit, and a key used before is answered from its row, refused
 * when its input differs. Its statements are prepared, as idemkit's are. Same table, same writes: the floor of what
 * exactly-once costs, to measure idemkit against.
 */
function handWrittenOrder(userId: string, key: string | null, items: OrderItem[]) {
  if (!key) throw new TRPCError({ code: "BAD_REQUEST", message: "Idempotency-Key is required." });
  const fingerprint = createHash("sha256").update(JSON.stringify(items)).digest("hex");
  const path = "bench.placeOrderHandWritten";
  const record = and(eq(idempotencyKeys.scope, userId), eq(idempotencyKeys.path, path), eq(idempotencyKeys.key, key));
  return db.transaction(async (tx) => {
    const claimed = await tx
      .insert(idempotencyKeys)
      .values({ scope: userId, path, key, fingerprint, state: "in_progress", expiresAt: new Date(Date.now() + DAY_MS) })
      .onConflictDoNothing()
      .returning({ fence: idempotencyKeys.fence })
      .prepare("bench_hand_claim")
      .execute();
    if (claimed.length === 0) {
      const [stored] = await tx
        .select({ fingerprint: idempotencyKeys.fingerprint, body: idempotencyKeys.responseBody })
        .from(idempotencyKeys)
        .where(record)
        .prepare("bench_hand_read")
        .execute();
      if (stored?.fingerprint !== fingerprint) throw new TRPCError({ code: "UNPROCESSABLE_CONTENT" });
      return JSON.parse(String(stored.body)) as Awaited<ReturnType<typeof writeOrder>>;
    }
    const order = await writeOrder(tx, userId, items, `${key}:payment`);
    await tx
      .update(idempotencyKeys)
      .set({ state: "completed", responseStatus: 200, responseBody: JSON.stringify(order) })
      .where(record)
      .prepare("bench_hand_complete")
      .execute();
    return order;
  });
}
const DAY_MS = 24 * 60 * 60 * 1_000;

const idemkitStatements = statementsFor('"idempotency_keys"');
/**
 * handWrittenOrder with the statements idemkit's atomic mode sends, as it sends them, and none of its engine (no
 * deadlines, telemetry, replay cache or fence): the claim that takes the key's advisory lock and bounds its wait on
 * the row, the savepoint that lets an error answer be kept while its writes are undone, and the completion. Between
 * this and handWrittenOrder is what those guarantees cost in SQL; between this and placeOrderAtomic, the engine.
 */
function idemkitSqlOrder(userId: string, key: string | null, items: OrderItem[]) {
  if (!key) throw new TRPCError({ code: "BAD_REQUEST", message: "Idempotency-Key is required." });
  const fingerprint = createHash("sha256").update(JSON.stringify(items)).digest("hex");
  const id = [userId, "bench.placeOrderIdemkitSql", key];
  return db.transaction(async (tx) => {
    const expiresAt = Date.now() + DAY_MS;
    const claimParams = [...id, fingerprint, expiresAt, expiresAt, "5000ms", true, 30_000];
    const [claimed] = await run(tx, idemkitStatements.CLAIM, claimParams, savepoint);
    if (claimed?.claimed_fence == null) {
      if (claimed?.free === false) throw new TRPCError({ code: "CONFLICT", message: "In progress." });
      if (claimed?.fingerprint !== fingerprint) throw new TRPCError({ code: "UNPROCESSABLE_CONTENT" });
      return JSON.parse(String(claimed.response_body)) as Awaited<ReturnType<typeof writeOrder>>;
    }
    const order = await writeOrder(tx, userId, items, `${key}:payment`);
    const completion = [...id, expiresAt, 200, JSON.stringify(order), claimed.claimed_fence];
    if ((await run(tx, idemkitStatements.COMPLETE, completion)).length !== 1) throw new Error("The record vanished.");
    return order;
  });
}

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
      ...(redis && { leaseOrderRedis: leased(redisStore({ client: redis })) }),
      ...(dynamo &&
        dynamoTable && { leaseOrderDynamo: leased(dynamoStore({ client: dynamo, tableName: dynamoTable })) }),
      placeOrderAtomic: idempotent
        .input(placeOrderInput)
        .mutation(({ ctx, input }) =>
          writeOrder(ctx.idempotency.tx, ctx.userId ?? "bench", input.items, ctx.idempotency.subKey("payment")),
        ),
      placeOrderHandWritten: t.procedure
        .input(placeOrderInput)
        .mutation(({ ctx, input }) =>
          handWrittenOrder(ctx.userId ?? "bench", ctx.req.headers.get("idempotency-key"), input.items),
        ),
      placeOrderIdemkitSql: t.procedure
        .input(placeOrderInput)
        .mutation(({ ctx, input }) =>
          idemkitSqlOrder(ctx.userId ?? "bench", ctx.req.headers.get("idempotency-key"), input.items),
        ),
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
  await close();
  redis?.destroy();
  dynamo?.destroy();
  process.exit(0);
});
