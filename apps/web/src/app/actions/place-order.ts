"use server";
/**
 * The checkout as a Server Action: one product, placed with a form that works with and without JavaScript. The
 * order is written through the idempotent transaction with the same `writeOrder` and confirmation as the tRPC
 * checkout, then the page is sent to its receipt: a resubmission of the same action is sent there too, with no
 * order of its own. A form it cannot place comes back as a state that asks for a correction, which is not kept.
 */
import { drizzleStore } from "@idemkit/drizzle";
import { type ActionRefusal, idempotentAction } from "@idemkit/next";
import { redirect } from "next/navigation";
import { ORDER_PLACED, type OrderPlaced, outbox } from "@/server/confirmations";
import { database } from "@/server/database";
import { beforeCommit, withStoreFaults } from "@/server/faults";
import { CATALOG, writeOrder } from "@/server/router";
import { currentUser } from "./current-user";

/** What the form shows between submissions: nothing yet, or what to correct. */
export interface CheckoutState {
  problem?: string;
}

type PlaceOrder = (previous: CheckoutState | ActionRefusal, form: FormData) => Promise<CheckoutState | ActionRefusal>;
let protectedPlaceOrder: PlaceOrder | undefined;

/** Places the form's order once per user action, and redirects to its receipt. */
export async function placeOrderAction(
  previous: CheckoutState | ActionRefusal,
  form: FormData,
): Promise<CheckoutState | ActionRefusal> {
  // The store needs the database, which opens on the first request (an embedded one, or the server's).
  protectedPlaceOrder ??= idempotentAction(
    "actions.placeOrder",
    async (idempotency, _previous: CheckoutState, submitted: FormData): Promise<CheckoutState> => {
      const sku = String(submitted.get("sku"));
      const qty = Number(submitted.get("qty"));
      if (!CATALOG.some((product) => product.sku === sku) || !Number.isInteger(qty) || qty < 1 || qty > 99) {
        return { problem: "Choose a product and a quantity from 1 to 99." };
      }
      const order = await writeOrder(idempotency.tx, idempotency.scope, [{ sku, qty }], idempotency.subKey("payment"));
      const placed: OrderPlaced = { orderId: order.orderId };
      await outbox.enqueue(idempotency, { topic: ORDER_PLACED, payload: placed });
      await beforeCommit(idempotency.scope);
      redirect(`/actions?placed=${order.orderId}`);
    },
    {
      store: withStoreFaults(drizzleStore({ db: (await database()).db })),
      scope: currentUser,
      stores: (state) => (state as CheckoutState).problem === undefined,
      renderBack: ["sku", "qty"],
    },
  );
  return protectedPlaceOrder(previous, form);
}
