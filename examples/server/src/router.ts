/**
 * A small checkout API: `checkout.placeOrder` is protected by idemkit in atomic mode (the order and the stored
 * result commit together), `checkout.orders` lists the caller's orders. The user comes from the `x-user`
 * header: a stand-in for real authentication, which this example does not need.
 */
import { drizzleStore } from "@idemkit/drizzle";
import { idempotency, idempotencyErrorData } from "@idemkit/trpc";
import { type AnyTRPCRouter, initTRPC, TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { desc, eq } from "drizzle-orm";
import superjson from "superjson";
import { z } from "zod";
import type { Database } from "./database.js";
import { type OrderItem, orders } from "./schema.js";

export const CATALOG = [
  { sku: "tea", name: "Green tea, 100 g", priceCents: 650 },
  { sku: "mug", name: "Stoneware mug", priceCents: 1_800 },
  { sku: "kettle", name: "Gooseneck kettle", priceCents: 5_400 },
] as const;

export interface Context {
  req: Request;
  resHeaders: Headers;
  userId: string;
}

const t = initTRPC.context<Context>().create({
  transformer: superjson,
  errorFormatter: ({ shape, error }) => ({
    ...shape,
    data: { ...shape.data, idempotency: idempotencyErrorData(error) },
  }),
});

export const placeOrderInput = z.object({
  items: z
    .array(z.object({ sku: z.string().min(1).max(64), qty: z.number().int().positive().max(99) }))
    .min(1)
    .max(50),
});

/** Prices the items; an unknown sku is the client's mistake (404), stored and replayed like any answer. */
export function priceOf(items: OrderItem[]): number {
  let totalCents = 0;
  for (const { sku, qty } of items) {
    const product = CATALOG.find((candidate) => candidate.sku === sku);
    if (!product) throw new TRPCError({ code: "NOT_FOUND", message: `There is no product "${sku}".` });
    totalCents += product.priceCents * qty;
  }
  return totalCents;
}

/** Writes one order with whatever it is given: the idempotent transaction, or a plain one. */
export async function insertOrder(db: Pick<Database, "insert">, userId: string, items: OrderItem[]) {
  const [order] = await db
    .insert(orders)
    .values({ userId, items, totalCents: priceOf(items) })
    .returning({ orderId: orders.id, totalCents: orders.totalCents, createdAt: orders.createdAt });
  if (!order) throw new Error("insert returned no row");
  return order;
}

export interface RouterOptions {
  db: Database;
  /** Completed results kept in memory for replays (idemkit's default is 10,000). */
  replayCacheSize?: number;
}

export function createRouter({ db, replayCacheSize }: RouterOptions) {
  const store = drizzleStore({ db });
  const idempotent = t.procedure.use(
    idempotency({
      store,
      transformer: superjson,
      scope: ({ ctx }: { ctx: Context }) => ctx.userId,
      ...(replayCacheSize !== undefined && { replayCacheSize }),
    }),
  );
  return t.router({
    checkout: t.router({
      products: t.procedure.query(() => CATALOG),
      placeOrder: idempotent
        .input(placeOrderInput)
        .mutation(({ ctx, input }) => insertOrder(ctx.idempotency.tx, ctx.userId, input.items)),
      orders: t.procedure.query(({ ctx }) =>
        db.select().from(orders).where(eq(orders.userId, ctx.userId)).orderBy(desc(orders.id)),
      ),
    }),
  });
}

export type AppRouter = ReturnType<typeof createRouter>;

/** A Fetch handler serving `router` at `/api/trpc`. */
export function createHandler(router: AnyTRPCRouter) {
  return (req: Request) =>
    fetchRequestHandler({
      endpoint: "/api/trpc",
      req,
      router,
      createContext: ({ req: request, resHeaders }): Context => ({
        req: request,
        resHeaders,
        userId: request.headers.get("x-user") ?? "guest",
      }),
    });
}

export { t };
