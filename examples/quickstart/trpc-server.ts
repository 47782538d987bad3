/** The README's tRPC quickstart, server side: a router with one protected mutation, and its route handler. */
// #region trpc-server
import { drizzleStore } from "@idemkit/drizzle";
import { idempotency } from "@idemkit/trpc";
import { initTRPC } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { cart } from "../server/cart";
import { db } from "../server/db";
import { orders } from "../server/schema";

// The middleware reads the key from `req` and marks a replay on `resHeaders`, as the fetch adapter hands them over.
const t = initTRPC.context<{ req: Request; resHeaders: Headers; userId: string }>().create();

export const appRouter = t.router({
  placeOrder: t.procedure
    .use(idempotency({ store: drizzleStore({ db }), scope: ({ ctx }) => ctx.userId }))
    .input(cart)
    .mutation(async ({ ctx: { idempotency, userId }, input }) => {
      // Through the call's transaction: the order and its record commit together, or neither does.
      const [order] = await idempotency.tx.insert(orders).values({ userId, items: input.items }).returning();
      return { orderId: order?.id };
    }),
});
export type AppRouter = typeof appRouter;

// app/api/trpc/[trpc]/route.ts; `userId` is your session's user (a header here, to stay short).
export const POST = (req: Request) =>
  fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: ({ resHeaders }) => ({ req, resHeaders, userId: req.headers.get("x-user") ?? "guest" }),
  });
// #endregion trpc-server
