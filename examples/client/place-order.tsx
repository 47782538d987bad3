/** The checkout's button: one key per user action, whatever the double clicks, retries and reloads. */
// #region place-order-form
import { useIdempotentMutation } from "@idemkit/react";
import type { Cart } from "../server/cart";
import { useTRPC, useTRPCClient } from "./trpc";

export function PlaceOrder({ cart }: { cart: Cart }) {
  // #region lookup
  const trpcClient = useTRPCClient();
  const order = useIdempotentMutation(useTRPC().checkout.placeOrder, {
    // After a reload finds the action in sessionStorage, or the link gave up: what became of it?
    lookup: (input, { signal }) => trpcClient.idempotencyOutcome.query(input, { signal }),
  });
  // #endregion lookup
  const retryInS = order.nextRetryAt && Math.ceil((order.nextRetryAt - Date.now()) / 1000);
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        order.mutate(cart);
      }}
    >
      <button type="submit" disabled={order.isPending || order.isCheckingOutcome}>
        Place order
      </button>
      {order.isCheckingOutcome && <p>Checking whether your order went through…</p>}
      {order.isOffline && <p>Offline: the order will be sent when you are back.</p>}
      {retryInS !== undefined && (
        <p>
          {order.failedAttemptStatus === undefined ? "Connection lost" : "The shop had a problem"}: retrying in{" "}
          {retryInS} s
        </p>
      )}
      {order.isSuccess && (
        <p>
          {order.replayed ? "Already placed: showing your order" : "Order placed"} #{order.data.orderId}
        </p>
      )}
      {order.isError && <p>{order.retryable ? "Could not reach us: press again" : order.error.message}</p>}
    </form>
  );
}
// #endregion place-order-form
