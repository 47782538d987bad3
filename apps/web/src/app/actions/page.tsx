/**
 * The checkout as a plain HTML form and a Server Action: it works without JavaScript, and the same rendered form
 * sent twice (a double click, a resubmission) places one order, whose receipt both are sent to.
 */
import { IdempotencyKeyField } from "@idemkit/next";
import { CATALOG } from "@/server/router";
import { placeOrderAction } from "./place-order";

export default async function ActionCheckout({
  searchParams,
}: {
  searchParams: Promise<{ placed?: string; problem?: string }>;
}) {
  const { placed, problem } = await searchParams;
  return (
    <main>
      <h1>Checkout, as a form</h1>
      <p className="lede">A Server Action, with or without JavaScript: each rendered form places one order.</p>
      {placed ? <p role="status">Order #{placed} placed.</p> : null}
      {problem ? <p role="alert">{problem}</p> : null}
      <form action={placeOrderAction} aria-label="Order">
        <IdempotencyKeyField />
        <label>
          Product{" "}
          <select name="sku" defaultValue="tea">
            {CATALOG.map((product) => (
              <option key={product.sku} value={product.sku}>
                {product.name}
              </option>
            ))}
          </select>
        </label>{" "}
        <label>
          Quantity <input name="qty" type="number" min={1} max={99} defaultValue={1} />
        </label>{" "}
        <button type="submit">Place order</button>
      </form>
    </main>
  );
}
