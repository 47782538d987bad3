/**
 * The same checkout outside tRPC: a Next.js route handler (app/api/orders/route.ts) protected by the Fetch adapter,
 * on the same store and tables as the tRPC procedures.
 */
// #region route-handler
import { withIdempotency } from "@idemkit/core/fetch";
import { drizzleStore } from "@idemkit/drizzle";
import { cart } from "./cart";
import { db } from "./db";
import { orders } from "./schema";
import { sessionOf } from "./session";

const placeOrder = withIdempotency(
  async (request, { tx, scope }) => {
    const parsed = cart.safeParse(await request.json());
    // Stored like any 4xx: the same body with the same key is refused the same way.
    if (!parsed.success) return Response.json({ error: parsed.error.issues }, { status: 400 });
    const [order] = await tx.insert(orders).values({ userId: scope, items: parsed.data.items }).returning();
    return Response.json({ orderId: order?.id }, { status: 201, headers: { location: `/orders/${order?.id}` } });
  },
  {
    store: drizzleStore({ db }),
    // Who owns the key: one user can never replay or block another's. POST below lets only a session through.
    scope: async (request) => (await sessionOf(request.headers))?.userId ?? "",
    // Its name in records, spans and metrics: the route, never the URL (whose ids would make a name per order).
    path: () => "/api/orders",
  },
);

export async function POST(request: Request): Promise<Response> {
  if (!(await sessionOf(request.headers))) return Response.json({ error: "Sign in first" }, { status: 401 });
  return placeOrder(request);
}
// #endregion route-handler
