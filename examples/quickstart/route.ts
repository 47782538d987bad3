/** The README's route handler quickstart: a Next.js route handler (app/api/orders/route.ts) run once per key. */
// #region route
import { withIdempotency } from "@idemkit/core/fetch";
import { drizzleStore } from "@idemkit/drizzle";
import { cart } from "../server/cart";
import { db } from "../server/db";
import { orders } from "../server/schema";

// A POST with an Idempotency-Key header runs once; the same key again gets the same answer, replayed.
export const POST = withIdempotency(
  async (request, { tx, scope }) => {
    const { items } = cart.parse(await request.json());
    const [order] = await tx.insert(orders).values({ userId: scope, items }).returning();
    return Response.json({ orderId: order?.id }, { status: 201 });
  },
  {
    store: drizzleStore({ db }),
    scope: (request) => request.headers.get("x-user") ?? "guest", // whose key: your session's user
    path: () => "/api/orders", // its name in records and metrics
  },
);
// #endregion route
