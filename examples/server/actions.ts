/**
 * The checkout as a Next.js Server Action (app/checkout/actions.ts), on the same store and tables as the tRPC
 * procedures: one order per user action, with or without JavaScript.
 */
// #region server-action
"use server";
import { drizzleStore } from "@idemkit/drizzle";
import { idempotentAction } from "@idemkit/next";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { cart } from "./cart";
import { db } from "./db";
import { orders } from "./schema";
import { sessionOf } from "./session";

/** What the form shows between submissions: nothing yet, or what to correct. */
export interface CheckoutState {
  error?: string;
}

export const placeOrder = idempotentAction(
  "checkout.placeOrder", // its name in the records: keep it stable across deploys
  async ({ tx, scope }, _previous: CheckoutState, form: FormData): Promise<CheckoutState> => {
    const parsed = cart.safeParse({ items: [{ sku: form.get("sku"), qty: Number(form.get("qty")) }] });
    if (!parsed.success) return { error: "Choose a product and a quantity from 1 to 99." };
    const [order] = await tx.insert(orders).values({ userId: scope, items: parsed.data.items }).returning();
    redirect(`/orders/${order?.id}`); // a resubmission is sent to the same receipt
  },
  {
    store: drizzleStore({ db }),
    // Who owns the key: one user can never replay or block another's.
    scope: async () => (await sessionOf(await headers()))?.userId ?? redirect("/sign-in"),
    // A state that asks for a correction is not kept: nothing is replayed, and a lookup finds nothing, for it.
    stores: (state) => (state as CheckoutState).error === undefined,
    // The fields a refusal carries back into the page for the form to send again: never a password or a card's.
    renderBack: ["sku", "qty"],
  },
);
// #endregion server-action
