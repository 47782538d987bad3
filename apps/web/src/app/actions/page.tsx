/**
 * The checkout as a Server Action form: it works without JavaScript, and each user action places one order, whose
 * receipt the page is sent to: the same rendered form sent twice, a double click, an answer lost on the way, a
 * reload before the answer came.
 */
import { IdempotencyKeyField } from "@idemkit/next";
import { CATALOG } from "@/server/router";
import { CheckoutForm } from "./checkout-form";

export default async function ActionCheckout({ searchParams }: { searchParams: Promise<{ placed?: string }> }) {
  const { placed } = await searchParams;
  return (
    <main>
      <h1>Checkout, as a form</h1>
      <p className="lede">A Server Action, with or without JavaScript: each user action places one order.</p>
      {placed ? <p role="status">Order #{placed} placed.</p> : null}
      <CheckoutForm keyField={<IdempotencyKeyField />} products={CATALOG} />
    </main>
  );
}
