"use client";
/**
 * The checkout: a cart, a "Place order" button on useIdempotentMutation, a status line that says what the
 * button's action is doing, and the user's orders. The cart is the action's input: the same cart is the same
 * action (pressing again replays), a changed cart is a new one. The cart and the status line speak of the same
 * order: after a reload the cart becomes the order the page found, and a cart changed since its order was placed
 * is said to be another.
 */
import { useIdempotentMutation } from "@idemkit/react";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { OrderNote } from "./order-note";
import { useTRPC, useTRPCClient } from "./trpc";

type Cart = Record<string, number>;
type CartLine = { sku: string; qty: number };

const money = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
const price = (cents: number) => money.format(cents / 100);

export function Checkout() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const products = useQuery(trpc.checkout.products.queryOptions());
  const orders = useQuery(
    trpc.checkout.orders.queryOptions(undefined, {
      // A confirmation is sent just after its order commits: look again until every order shows one.
      refetchInterval: (query) => (query.state.data?.some((placed) => !placed.confirmedAt) ? 500 : false),
    }),
  );
  const [cart, setCart] = useState<Cart>({ tea: 1 });
  const trpcClient = useTRPCClient();
  const order = useIdempotentMutation(trpc.checkout.placeOrder, {
    onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.checkout.orders.queryKey() }),
    // After a reload mid-order, the page asks what became of it rather than leaving the user to guess.
    lookup: (input, { signal }) => trpcClient.idempotencyOutcome.query(input, { signal }),
  });
  const now = useClock(order.nextRetryAt !== undefined || order.waitingForTabUntil !== undefined);

  // The cart of the action the page shows: the one it was sent with, or, for an order found after a reload (looked
  // up, or restored while it waited offline), the one it was placed with. When it changes, the cart becomes it:
  // the cart the page starts with is not the order it finds. Set during render, so no frame shows the two apart.
  const actionLines = order.variables?.items ?? order.data?.items;
  const [cartSetFrom, setCartSetFrom] = useState(actionLines);
  if (actionLines !== cartSetFrom) {
    setCartSetFrom(actionLines);
    if (actionLines) setCart(cartOf(actionLines));
  }

  const items = Object.entries(cart)
    .filter(([, qty]) => qty > 0)
    .map(([sku, qty]) => ({ sku, qty }));
  const totalCents = items.reduce(
    (sum, { sku, qty }) => sum + (products.data?.find((product) => product.sku === sku)?.priceCents ?? 0) * qty,
    0,
  );
  const setQty = (sku: string, qty: number) =>
    setCart((current) => ({ ...current, [sku]: Math.max(0, Math.min(99, qty)) }));

  return (
    <>
      <section aria-labelledby="cart-heading">
        <h2 id="cart-heading">Cart</h2>
        <ul className="products">
          {products.data?.map((product) => (
            <li key={product.sku}>
              <span className="name">{product.name}</span>
              <span className="price">{price(product.priceCents)}</span>
              <span className="qty">
                <button
                  type="button"
                  aria-label={`Remove one ${product.name}`}
                  onClick={() => setQty(product.sku, (cart[product.sku] ?? 0) - 1)}
                >
                  −
                </button>
                <span className="count">{cart[product.sku] ?? 0}</span>
                <button
                  type="button"
                  aria-label={`Add one ${product.name}`}
                  onClick={() => setQty(product.sku, (cart[product.sku] ?? 0) + 1)}
                >
                  +
                </button>
              </span>
            </li>
          ))}
        </ul>
        <p className="total">
          Total <strong>{price(totalCents)}</strong>
        </p>
        <div className="actions">
          <button
            type="button"
            className="primary"
            // Until the lookup has answered whether the order went through, pressing again would only guess.
            disabled={items.length === 0 || order.isPending || order.isCheckingOutcome}
            onClick={() => order.mutate({ items })}
          >
            Place order
          </button>
          {order.isSuccess && (
            <button
              type="button"
              onClick={() => {
                order.reset();
                setCart({});
              }}
            >
              Start a new order
            </button>
          )}
        </div>
        {/* The action's key, for anyone inspecting the page (and the browser tests) to see which action it shows. */}
        <p role="status" className={`status ${order.status}`} data-idempotency-key={order.key}>
          {statusLine(
            {
              ...order,
              orderId: order.data?.orderId,
              // An answer stored before orders carried their cart has none to compare.
              placedWithOtherCart: order.data?.items !== undefined && !sameLines(order.data.items, items),
              errorMessage: order.error?.message,
              checking: order.isCheckingOutcome,
            },
            now,
          )}
        </p>
      </section>

      <section aria-labelledby="orders-heading">
        <h2 id="orders-heading">Your orders</h2>
        {orders.data?.length === 0 && <p>No orders yet.</p>}
        {/* Not numbered: each order carries its own number, and "1." beside "Order #3" would be a second one. */}
        <ul className="orders" aria-label="Your orders">
          {orders.data?.map((placed) => (
            <li key={placed.orderId} data-order-id={placed.orderId}>
              <strong>Order #{placed.orderId}</strong> · {price(placed.totalCents)} ·{" "}
              {placed.items.map((item) => `${item.qty} × ${item.sku}`).join(", ")}
              <time dateTime={placed.createdAt.toISOString()}>{placed.createdAt.toLocaleTimeString("en-US")}</time>
              <span className="confirmation" data-confirmations={placed.confirmationsSent}>
                {placed.confirmedAt ? "Confirmation sent" : "Confirmation on its way"}
              </span>
              <OrderNote orderId={placed.orderId} note={placed.note} version={placed.version} />
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}

interface ActionView {
  status: "idle" | "pending" | "success" | "error";
  isOffline: boolean;
  nextRetryAt: number | undefined;
  /** Another tab is sending this cart: this one waits for its answer until then, and then sends itself. */
  waitingForTabUntil: number | undefined;
  replayed: boolean;
  retryable: boolean | undefined;
  orderId: number | undefined;
  /** The order shown was placed with another cart than the one on screen: the cart changed since. */
  placedWithOtherCart: boolean;
  errorMessage: string | undefined;
  /** The HTTP status the attempt being retried was answered with; undefined when no answer came. */
  failedAttemptStatus: number | undefined;
  /** The lookup is being asked what became of the order (after a reload, or after the link gave up). */
  checking: boolean;
}

const CHECKING = "Checking whether your order went through…";

/** What the button's action is doing, in words; the order number once the server has answered. */
function statusLine(action: ActionView, now: number): string {
  if (action.isOffline) return "You are offline: the order will be sent when the connection is back.";
  if (action.waitingForTabUntil !== undefined) {
    const seconds = Math.max(0, Math.ceil((action.waitingForTabUntil - now) / 1000));
    return `Another tab is placing this order: waiting for it (${seconds} s)…`;
  }
  if (action.nextRetryAt !== undefined) {
    const seconds = Math.max(0, Math.ceil((action.nextRetryAt - now) / 1000));
    // Only an attempt nobody answered is a lost connection: a shop that answered is there, and failing or busy.
    if (action.failedAttemptStatus === undefined) return `Connection lost, retrying in ${seconds} s…`;
    return action.failedAttemptStatus >= 500
      ? `The shop had a problem; trying again in ${seconds} s…`
      : `The shop is busy; trying again in ${seconds} s…`;
  }
  switch (action.status) {
    case "pending":
      return "Placing order…";
    case "success":
      if (action.placedWithOtherCart) {
        return `Order #${action.orderId} was placed with a different cart; this one is not ordered yet.`;
      }
      return action.replayed
        ? `Already placed: showing your order #${action.orderId}.`
        : `Order placed: #${action.orderId}.`;
    case "error":
      if (action.checking) return CHECKING;
      return action.retryable
        ? "Could not reach the shop. Press Place order again: it will not be placed twice."
        : `Not placed: ${action.errorMessage}`;
    case "idle":
      return action.checking ? CHECKING : "";
  }
}

function cartOf(lines: CartLine[]): Cart {
  return Object.fromEntries(lines.map(({ sku, qty }) => [sku, qty]));
}

/** Whether two carts hold the same products in the same quantities, in whatever order they list them. */
function sameLines(one: CartLine[], other: CartLine[]): boolean {
  const listed = (lines: CartLine[]) =>
    lines
      .map(({ sku, qty }) => `${qty} × ${sku}`)
      .sort()
      .join(", ");
  return listed(one) === listed(other);
}

/** The current time, re-read four times a second while `ticking`, for the countdowns. */
function useClock(ticking: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!ticking) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, [ticking]);
  return now;
}
