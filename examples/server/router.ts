/** The checkout's API: place an order, edit its note, list the user's orders, and ask what became of an order. */
import { StaleVersionError, updateIfVersion } from "@idemkit/drizzle";
import { outcomeLookup, outcomeLookupInput } from "@idemkit/trpc";
import { TRPCError } from "@trpc/server";
import { and, desc, eq } from "drizzle-orm";
import superjson from "superjson";
import { z } from "zod";
import { cart } from "./cart";
import { outbox } from "./confirmations";
import { db } from "./db";
import { orders } from "./schema";
import { authedProcedure, idempotentProcedure, router, scope, store } from "./trpc";

export const appRouter = router({
  // #region outcome-lookup
  idempotencyOutcome: authedProcedure
    .input(outcomeLookupInput)
    .query(outcomeLookup({ store, scope, procedures: ["checkout.placeOrder"], transformer: superjson })),
  // #endregion outcome-lookup

  checkout: router({
    // #region place-order
    placeOrder: idempotentProcedure.input(cart).mutation(async ({ ctx, input }) => {
      // Written through ctx.idempotency.tx: the order and the stored answer commit together, or neither does.
      const [order] = await ctx.idempotency.tx
        .insert(orders)
        .values({ userId: ctx.session.userId, items: input.items })
        .returning({ orderId: orders.id, createdAt: orders.createdAt });
      if (!order) throw new Error("The insert returned no order.");
      // Its confirmation, in the same transaction (see "Effects after the response").
      await outbox.enqueue(ctx.idempotency, { topic: "order.placed", payload: { orderId: order.orderId } });
      return order; // one order, { orderId, createdAt }: the client reads order.data.orderId
    }),
    // #endregion place-order

    // #region edit-note
    editNote: idempotentProcedure
      .input(z.object({ orderId: z.number(), version: z.number(), note: z.string().max(200) }))
      .mutation(async ({ ctx, input }) => {
        try {
          const version = await updateIfVersion(ctx.idempotency.tx, orders, {
            where: and(eq(orders.id, input.orderId), eq(orders.userId, ctx.session.userId)),
            version: orders.version,
            expectedVersion: input.version,
            set: { note: input.note },
          });
          return { version };
        } catch (error) {
          if (error instanceof StaleVersionError) throw new TRPCError({ code: "CONFLICT", message: error.message });
          throw error;
        }
      }),
    // #endregion edit-note

    orders: authedProcedure.query(({ ctx }) =>
      db.select().from(orders).where(eq(orders.userId, ctx.session.userId)).orderBy(desc(orders.id)).limit(50),
    ),
  }),
});

export type AppRouter = typeof appRouter;
