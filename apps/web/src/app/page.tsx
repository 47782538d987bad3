import { Checkout } from "@/client/checkout";

export default function Page() {
  return (
    <main>
      <h1>Checkout</h1>
      <p className="lede">
        Double-click, reload, go offline: each order is placed once. Every press of the button carries the same
        Idempotency-Key until the cart changes.
      </p>
      <Checkout />
    </main>
  );
}
