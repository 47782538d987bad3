"use server";
/**
 * The checkout as a Server Action: one product, placed with a plain form that works without JavaScript. The order
 * is written through the idempotent transaction with the same `writeOrder` and confirmation as the tRPC checkout,
 * then the page is sent to its receipt: a resubmission of the same rendered form is sent there too, with no order
 * of its own.
 */
import { drizzleStore } from "@idemkit/drizzle";
import { idempotentAction, isActionRefusal } from "@idemkit/next";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { ORDER_PLACED, type OrderPlaced, outbox } from "@/server/confirmations";
import { database } from "@/server/database";
import { CATALOG, writeOrder } from "@/server/router";
import { userFromCookies } from "@/server/user";

/** The signed-in user: the proxy gives every page view a `uid` cookie, so a form submission always has one. */
async function currentUser(): Promise<string> {
  const userId = userFromCookies((await headers()).get("cookie"));
  if (!userId) throw new Error("No uid cookie: open the page first.");
  return userId;
}

let protectedPlaceOrder: ((form: FormData) => Promise<unknown>) | undefined;

/**
 * Places the form's order once per rendered form, and redirects to its receipt; a form it cannot place, or one
 * idemkit refused, is sent back to the page with what to say (a plain form shows no returned state).
 */
export async function placeOrderAction(form: FormData): Promise<void> {
  protectedPlaceOrder ??= idempotentAction(
    "actions.placeOrder",
    async (idempotency, submitted: FormData) => {
      const sku = String(submitted.get("sku"));
      const qty = Number(submitted.get("qty"));
      if (!CATALOG.some((product) => product.sku === sku) || !Number.isInteger(qty) || qty < 1 || qty > 99) {
        redirect(`/actions?problem=${encodeURIComponent("Choose a product and a quantity from 1 to 99.")}`);
      }
      const userId = idempotency.scope;
      const order = await writeOrder(idempotency.tx, userId, [{ sku, qty }], idempotency.subKey("payment"));
      const placed: OrderPlaced = { orderId: order.orderId };
      await outbox.enqueue(idempotency, { topic: ORDER_PLACED, payload: placed });
      redirect(`/actions?placed=${order.orderId}`);
    },
    { store: drizzleStore({ db: (await database()).db }), scope: currentUser },
  );
  const outcome = await protectedPlaceOrder(form);
  if (isActionRefusal(outcome)) redirect(`/actions?problem=${encodeURIComponent(outcome.idempotencyError.message)}`);
}
