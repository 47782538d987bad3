/** The checkout's form (app/checkout/checkout-form.tsx): one key per user action over useActionState. */
// #region checkout-form
"use client";
import { ActionKeyField, isActionRefusal, submittedValue, useIdempotentActionState } from "@idemkit/next/client";
import type { ReactNode } from "react";
import { placeOrder } from "../server/actions";

export function CheckoutForm({ keyField }: { keyField: ReactNode }) {
  // useActionState's [state, formAction, isPending], with one key per user action.
  const [state, formAction, pending] = useIdempotentActionState(placeOrder, {});
  return (
    <form action={formAction}>
      {/* The key without JavaScript (with it, the hook sends its own): after a refusal, the refused order's. */}
      <ActionKeyField state={state}>{keyField}</ActionKeyField>
      <input name="sku" defaultValue={submittedValue(state, "sku") ?? "mug"} />
      <input name="qty" type="number" defaultValue={submittedValue(state, "qty") ?? 1} />
      <button type="submit">Place order</button>
      {pending && <p>Placing your order…</p>}
      {isActionRefusal(state) && <p role="alert">{state.idempotencyError.message}</p>}
      {"error" in state && <p role="alert">{state.error}</p>}
    </form>
  );
}
// #endregion checkout-form
