/**
 * A refusal told apart by its code, which the compiler checks: the error `safe()` gives back (tRPC 11.22), as the
 * hook's `error` is, typed with the error shape the app's formatter gives (server/trpc.ts adds `idempotency`).
 */
import { idempotencyContext } from "@idemkit/trpc/client";
import { safe } from "@trpc/client";
import type { Cart } from "../server/cart";
import { trpcClient } from "./trpc";

// #region refusal
export async function placeOrderOnce(cart: Cart, key: string) {
  const [order, error] = await safe(
    trpcClient.checkout.placeOrder.mutate(cart, { context: idempotencyContext({ key }) }),
  );
  if (error?.data?.idempotency?.code === "FINGERPRINT_MISMATCH") {
    return { message: "This order was already placed with another cart: this cart was not ordered." };
  }
  if (error) throw error;
  return { orderId: order.orderId };
}
// #endregion refusal
