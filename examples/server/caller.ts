/** Placing an order from server code (a server action, a script), where no request carries a header. */
// #region caller
import { withIdempotencyKey } from "@idemkit/trpc";
import type { Cart } from "./cart";
import { appRouter } from "./router";
import type { Session } from "./session";
import { createCallerFactory } from "./trpc";

const createCaller = createCallerFactory(appRouter);

export function placeOrderOnServer(session: Session, cart: Cart, key: string) {
  const caller = createCaller(withIdempotencyKey({ session }, key)); // one key per action, chosen by the caller
  return caller.checkout.placeOrder(cart); // the same key again replays the first order
}
// #endregion caller
