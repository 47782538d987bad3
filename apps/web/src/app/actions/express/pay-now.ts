"use server";
/**
 * Express checkout: one kettle, paid at once, as a Server Action in lease mode, the mode for work whose effect leaves
 * the database (a card charged at a payment provider, which gets `subKey("payment")` as its own idempotency key).
 * The claim is committed on its own, the payment is made, and its answer (the redirect to its receipt) is stored
 * after it: when the store fails just then, the form says the payment may have gone through, and its next press
 * only checks.
 */
import { drizzleStore } from "@idemkit/drizzle";
import { type ActionRefusal, idempotentAction } from "@idemkit/next";
import { redirect } from "next/navigation";
import { database } from "@/server/database";
import { withStoreFaults } from "@/server/faults";
import { writeOrder } from "@/server/router";
import { currentUser } from "../current-user";

/** What the form shows between presses: nothing, until a refusal. */
export type ExpressState = Record<string, never>;

type PayNow = (previous: ExpressState | ActionRefusal, form: FormData) => Promise<ExpressState | ActionRefusal>;
let protectedPayNow: PayNow | undefined;

/** Pays for one kettle once per user action, and redirects to its receipt. */
export async function payNowAction(
  previous: ExpressState | ActionRefusal,
  form: FormData,
): Promise<ExpressState | ActionRefusal> {
  const { db } = await database();
  protectedPayNow ??= idempotentAction(
    "actions.payNow",
    async (idempotency, _previous: ExpressState, _form: FormData): Promise<ExpressState> => {
      const order = await writeOrder(db, idempotency.scope, [{ sku: "kettle", qty: 1 }], idempotency.subKey("payment"));
      redirect(`/actions/express?paid=${order.orderId}`);
    },
    { store: withStoreFaults(drizzleStore({ db })), mode: "lease", scope: currentUser },
  );
  return protectedPayNow(previous, form);
}
