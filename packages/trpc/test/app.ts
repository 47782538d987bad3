/**
 * The router the middleware tests drive over HTTP: a checkout-like mutation that writes a business row in
 * the idempotent transaction, and procedures that fail in each way the contract distinguishes. It runs in the
 * test process and, for the crash tests, in a child process that the test kills.
 */
import type { IdempotencyEvent, IdempotencyMode, IdempotencyStore } from "@idemkit/core";
import { drizzleStore, StaleVersionError, updateIfVersion } from "@idemkit/drizzle";
import { createOutbox } from "@idemkit/outbox";
import { initTRPC, TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { eq, sql } from "drizzle-orm";
import { integer, type PgDatabase, type PgQueryResultHKT, pgTable, serial, text } from "drizzle-orm/pg-core";
import superjson from "superjson";
import { z } from "zod";
import { idempotency, idempotencyErrorData, outcomeLookup, outcomeLookupInput } from "../src/index.js";

export const BUSINESS_TABLES = `create table if not exists orders (
  id serial primary key, user_id text not null, sku text not null, qty int not null,
  created_at timestamptz not null default now())`;

/** Carts for the optimistic concurrency procedure: created by the test that uses them. */
export const carts = pgTable("carts", {
  id: serial("id").primaryKey(),
  note: text("note").notNull(),
  version: integer("version").notNull().default(1),
});
export const CARTS_TABLE =
  "create table if not exists carts (id serial primary key, note text not null, version int not null default 1)";

interface Context {
  req: Request;
  resHeaders: Headers;
  userId: string;
}

// biome-ignore lint/suspicious/noExplicitAny: the fixture accepts any Drizzle PostgreSQL database
type AnyDb = PgDatabase<PgQueryResultHKT, any, any>;

export interface AppOptions {
  db: AnyDb;
  mode?: IdempotencyMode;
  leaseMs?: number;
  ttlMs?: number;
  now?: () => number;
  /** Overrides the store (a dead one, or the memory store). */
  store?: IdempotencyStore<unknown>;
  /** Store 5xx answers too (the middleware's `storeServerErrors`). */
  storeServerErrors?: boolean;
  /** Called with every event after the app has recorded it (a test's observer, which may throw). */
  observe?: (event: IdempotencyEvent) => void;
  /**
   * Awaited inside placeOrder after its insert, before it returns: lets a test hold a request mid-flight, and see
   * the call's signal.
   */
  hold?: (key: string, signal: AbortSignal) => Promise<void> | undefined;
  /** Lease mode: the middleware's `procedureTimeoutMs`. */
  procedureTimeoutMs?: number;
}

export function createApp({
  db,
  mode = "atomic",
  leaseMs,
  ttlMs,
  now,
  store,
  hold,
  observe,
  storeServerErrors,
  procedureTimeoutMs,
}: AppOptions) {
  const events: IdempotencyEvent[] = [];
  const executions = new Map<string, number>();
  const count = (name: string) => executions.set(name, (executions.get(name) ?? 0) + 1);
  const t = initTRPC.context<Context>().create({
    transformer: superjson,
    errorFormatter: ({ shape, error }) => ({
      ...shape,
      data: { ...shape.data, idempotency: idempotencyErrorData(error) },
    }),
  });
  const theStore = (store ?? drizzleStore({ db })) as ReturnType<typeof drizzleStore<AnyDb>>;
  const scope = ({ ctx }: { ctx: Context }) => ctx.userId;
  const idempotent = t.procedure.use(
    idempotency({
      store: theStore,
      scope,
      transformer: superjson,
      mode,
      ...(leaseMs !== undefined && { leaseMs }),
      ...(ttlMs !== undefined && { ttlMs }),
      ...(now !== undefined && { now }),
      ...(storeServerErrors !== undefined && { storeServerErrors }),
      ...(procedureTimeoutMs !== undefined && { procedureTimeoutMs }),
      onEvent: (event) => {
        events.push(event);
        observe?.(event);
      },
    }),
  );
  const writer = (tx: AnyDb | undefined) => tx ?? db;
  const outbox = createOutbox();
  const order = z.object({ sku: z.string().min(1), qty: z.number().int().positive().max(99) });

  const router = t.router({
    placeOrder: idempotent.input(order).mutation(async ({ ctx, input }) => {
      count("placeOrder");
      const [row] = await rowsOf(
        writer(ctx.idempotency.tx).execute(
          sql`insert into orders (user_id, sku, qty) values (${ctx.userId}, ${input.sku}, ${input.qty}) returning id, created_at`,
        ),
      );
      await hold?.(ctx.idempotency.key, ctx.idempotency.signal);
      if (input.sku === "unknown") {
        throw new TRPCError({ code: "NOT_FOUND", message: `No product ${input.sku}` });
      }
      if (input.sku === "crash") throw new Error("the payment provider timed out");
      return {
        orderId: Number(row?.id),
        createdAt: new Date(String(row?.created_at)),
        chargeKey: ctx.idempotency.subKey("charge"),
      };
    }),
    /** placeOrder that also enqueues its `order.placed` event in the idempotent transaction. */
    placeOrderAndNotify: idempotent.input(order).mutation(async ({ ctx, input }) => {
      count("placeOrderAndNotify");
      const [row] = await rowsOf(
        writer(ctx.idempotency.tx).execute(
          sql`insert into orders (user_id, sku, qty) values (${ctx.userId}, ${input.sku}, ${input.qty}) returning id`,
        ),
      );
      const orderId = Number(row?.id);
      await outbox.enqueue(ctx.idempotency, { topic: "order.placed", payload: { orderId, sku: input.sku } });
      if (input.sku === "unknown") throw new TRPCError({ code: "NOT_FOUND", message: `No product ${input.sku}` });
      if (input.sku === "crash") throw new Error("the payment provider timed out");
      return { orderId };
    }),
    /** An edit based on the version the client read (optimistic concurrency): a stale one is a 409. */
    renameCart: idempotent
      .input(z.object({ id: z.number(), version: z.number(), note: z.string() }))
      .mutation(async ({ ctx, input }) => {
        count("renameCart");
        try {
          const version = await updateIfVersion(writer(ctx.idempotency.tx), carts, {
            where: eq(carts.id, input.id),
            version: carts.version,
            expectedVersion: input.version,
            set: { note: input.note },
          });
          return { version };
        } catch (error) {
          if (error instanceof StaleVersionError) throw new TRPCError({ code: "CONFLICT", message: error.message });
          throw error;
        }
      }),
    flaky: idempotent.input(z.object({ n: z.number() })).mutation(({ input }) => {
      count("flaky");
      if ((executions.get("flaky") ?? 0) === 1) {
        throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: "first call fails" });
      }
      return { n: input.n };
    }),
    claimHandle: idempotent
      .input(z.object({ name: z.string(), swallow: z.boolean() }))
      .mutation(async ({ ctx, input }) => {
        count("claimHandle");
        try {
          await writer(ctx.idempotency.tx).execute(sql`insert into handles (name) values (${input.name})`);
        } catch {
          if (input.swallow) return { name: input.name, taken: true };
          throw new TRPCError({ code: "BAD_REQUEST", message: "That handle is taken." });
        }
        return { name: input.name, taken: false };
      }),
    conflicting: idempotent.input(z.object({ n: z.number() })).mutation(() => {
      count("conflicting");
      throw new TRPCError({ code: "CONFLICT", message: "That name is taken." });
    }),
    timeoutOnce: idempotent.input(z.object({ n: z.number() })).mutation(({ input }) => {
      count("timeoutOnce");
      if (executions.get("timeoutOnce") === 1) throw new TRPCError({ code: "TIMEOUT", message: "upstream was slow" });
      return { n: input.n };
    }),
    upload: idempotent.input(z.instanceof(FormData)).mutation(async ({ input }) => {
      count("upload");
      const file = input.get("file");
      if (!(file instanceof File)) throw new TRPCError({ code: "BAD_REQUEST", message: "No file." });
      return { name: file.name, text: await file.text() };
    }),
    noInput: idempotent.mutation(() => {
      count("noInput");
      return { at: new Date(0) };
    }),
    ping: idempotent.query(() => "pong"),
    /** What became of an action, by its procedure and key: the outcome lookup, scoped like the middleware. */
    idempotencyOutcome: t.procedure.input(outcomeLookupInput).query(
      outcomeLookup({
        store: theStore,
        scope,
        procedures: ["placeOrder", "placeOrderAndNotify"],
        transformer: superjson,
        ...(now !== undefined && { now }),
      }),
    ),
  });

  const handler = (req: Request) =>
    fetchRequestHandler({
      endpoint: "/trpc",
      req,
      router,
      createContext: ({ req: request, resHeaders }) => ({
        req: request,
        resHeaders,
        userId: request.headers.get("x-user") ?? "anonymous",
      }),
    });
  return { router, handler, events, executions };
}

export type AppRouter = ReturnType<typeof createApp>["router"];

async function rowsOf(result: Promise<unknown>): Promise<Array<Record<string, unknown>>> {
  const value = await result;
  return (Array.isArray(value) ? value : (value as { rows: Array<Record<string, unknown>> }).rows) ?? [];
}
