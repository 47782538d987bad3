"use client";
/**
 * The Server Action checkout's form: `useIdempotentActionState` keeps one key per user action once the page runs
 * JavaScript (a double click joins the order on its way, a lost answer is sent again with its key, a reload
 * mid-submit looks the order up); before that, and without JavaScript, it is a plain form post carrying the key
 * field the server rendered.
 */
import { ActionKeyField, isActionRefusal, submittedValue, useIdempotentActionState } from "@idemkit/next/client";
import { type ReactNode, useEffect, useState } from "react";
import { placeOrderAction } from "./place-order";

/**
 * The form, given the key field the server rendered for this page view and the products to choose from. The button
 * stays enabled while an order is on its way: pressing it again is what this page demonstrates is safe.
 */
export function CheckoutForm({
  keyField,
  products,
}: {
  keyField: ReactNode;
  products: ReadonlyArray<{ sku: string; name: string }>;
}) {
  const [state, formAction, pending] = useIdempotentActionState(
    placeOrderAction,
    {},
    {
      storageKey: "idemkit:actions.placeOrder",
    },
  );
  // For the browser suite: set once the page runs the form, when a press goes through the hook.
  const [ready, setReady] = useState(false);
  useEffect(() => setReady(true), []);
  const problem = isActionRefusal(state) ? state.idempotencyError.message : state.problem;
  return (
    <form action={formAction} aria-label="Order" aria-busy={pending} data-ready={ready || undefined}>
      {/* A refusal that asks for the same order again keeps its key and fields: without JavaScript, pressing again
          is then that order, not a second one. */}
      <ActionKeyField state={state}>{keyField}</ActionKeyField>
      <label>
        Product{" "}
        <select name="sku" defaultValue={submittedValue(state, "sku") ?? "tea"}>
          {products.map((product) => (
            <option key={product.sku} value={product.sku}>
              {product.name}
            </option>
          ))}
        </select>
      </label>{" "}
      <label>
        Quantity <input name="qty" type="number" min={1} max={99} defaultValue={submittedValue(state, "qty") ?? 1} />
      </label>{" "}
      <button type="submit">Place order</button>
      {problem ? <p role="alert">{problem}</p> : null}
    </form>
  );
}
