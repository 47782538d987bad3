/**
 * A user's Server Action, written against the installed tarballs and the installed `next` and `react` only (either
 * end of their ranges), called as Next.js calls a form's action: the previous state, then the form's FormData. The
 * same rendered form sent twice places one order and gets the same state; a resubmission of one that redirected is
 * sent to the same place, and of one that called notFound() gets notFound() again, read from that Next.js's own
 * digests; the key field asks for a request (that Next.js's `connection()`), and a form on the client hook renders
 * on the server (that React's `useActionState`). Run on PostgreSQL (IDEMKIT_PEER_DATABASE_URL, a database of its
 * own). Prints what it saw as JSON for the peer-range test.
 */
import { readFileSync } from "node:fs";
import { drizzleStore } from "@idemkit/drizzle";
import { IDEMPOTENCY_KEY_FIELD, IdempotencyKeyField, idempotentAction } from "@idemkit/next";
import { useIdempotentActionState } from "@idemkit/next/client";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
// Fully specified: outside Next.js's bundler, Node finds next's files by their names (next has no exports map).
import { notFound, redirect } from "next/navigation.js";
import postgres from "postgres";
import { createElement } from "react";
import { renderToString } from "react-dom/server";

interface OrderState {
  orderId?: number;
}

/** The FormData a rendered form posts: its key field, its fields, and a field React adds. */
function submission(key: string, item: string): FormData {
  const form = new FormData();
  form.set(IDEMPOTENCY_KEY_FIELD, key);
  form.set("item", item);
  form.set("$ACTION_KEY", "k1");
  return form;
}

/** The digest of what a call threw: how Next.js tells a redirect or a 404 from a failure. */
async function digestThrownBy(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
  } catch (error) {
    return String((error as { digest?: unknown }).digest);
  }
  throw new Error("the action returned where Next.js's control flow should have ended it");
}

async function main(): Promise<void> {
  const client = postgres(String(process.env.IDEMKIT_PEER_DATABASE_URL), { max: 4, onnotice: () => {} });
  try {
    await client.unsafe(`${readFileSync("schema.sql", "utf8")};
      create table orders (id serial primary key, item text not null)`);
    const db = drizzle({ client });
    const placeOrder = idempotentAction(
      "checkout.placeOrder",
      async ({ tx }, _previous: OrderState, form: FormData): Promise<OrderState> => {
        const item = String(form.get("item"));
        const [order] = await tx.execute<{ id: number }>(sql`insert into orders (item) values (${item}) returning id`);
        if (item === "discontinued") notFound();
        if (item === "with receipt") redirect(`/orders/${order?.id}`);
        return { orderId: order?.id };
      },
      { store: drizzleStore({ db }), scope: () => "consumer" },
    );
    const key = () => globalThis.crypto.randomUUID();

    const sentTwice = key();
    const first = await placeOrder({}, submission(sentTwice, "tea"));
    const again = await placeOrder({}, submission(sentTwice, "tea"));
    const redirectedTwice = key();
    const redirected = [
      await digestThrownBy(() => placeOrder({}, submission(redirectedTwice, "with receipt"))),
      await digestThrownBy(() => placeOrder({}, submission(redirectedTwice, "with receipt"))),
    ];
    const notFoundTwice = key();
    const missing = [
      await digestThrownBy(() => placeOrder({}, submission(notFoundTwice, "discontinued"))),
      await digestThrownBy(() => placeOrder({}, submission(notFoundTwice, "discontinued"))),
    ];
    const [placed] = await client<{ n: number }[]>`select count(*)::int as n from orders`;

    const keyField = await IdempotencyKeyField().then(
      () => "rendered outside a request",
      (error: unknown) => String((error as Error).message),
    );
    function CheckoutForm() {
      const [state, formAction, pending] = useIdempotentActionState(placeOrder, {});
      return createElement(
        "form",
        { action: formAction },
        createElement("button", { type: "submit", disabled: pending }, "Place order"),
        "orderId" in state ? createElement("p", { role: "status" }, `Order #${state.orderId} placed.`) : null,
      );
    }
    const form = renderToString(createElement(CheckoutForm));

    console.log(JSON.stringify({ first, again, redirected, notFound: missing, orders: placed?.n, keyField, form }));
  } finally {
    await client.end({ timeout: 1 });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
