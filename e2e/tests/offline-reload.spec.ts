/**
 * An order placed offline survives a reload: TanStack Query persists the paused mutation (the demo persists to
 * sessionStorage) with its key, the reloaded page restores it and sends it with that key, and the server holds one
 * order however often it is sent.
 */
import { watchMutations } from "@idemkit/playwright";
import { expect, type Page, test } from "@playwright/test";
import {
  ACTION_STORAGE_KEY,
  openCheckout,
  ordersOf,
  PLACE_ORDER_PATH,
  placeOrderButton,
  statusLine,
} from "./checkout-page.js";

/** The demo's persisted cache, as the page left it in sessionStorage. */
const persistedMutations = (page: Page) =>
  page.evaluate(() => {
    const cache = JSON.parse(sessionStorage.getItem("idemkit-demo:offline") ?? "null");
    return (cache?.json?.clientState?.mutations ?? []) as unknown[];
  });

test("an order placed offline, the page reloaded while still offline, then back online: one order, with its key", async ({
  page,
  context,
}) => {
  await openCheckout(page);
  const sent = watchMutations(page, { procedure: "checkout.placeOrder" });

  await context.setOffline(true);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/offline/);
  await expect.poll(() => persistedMutations(page)).toHaveLength(1);
  const action = JSON.parse(
    String(await page.evaluate((name) => sessionStorage.getItem(name), ACTION_STORAGE_KEY)),
  ) as { key: string };

  // The reload while offline: the page itself comes from the server (as a service worker would serve it), while
  // everything the page sends on its own, the order among it, meets the browser's offline network.
  await page.route(
    (url) => url.pathname !== PLACE_ORDER_PATH,
    async (route) => route.fulfill({ response: await route.fetch() }),
  );
  await page.reload();
  await expect(placeOrderButton(page)).toBeVisible();
  await expect(statusLine(page)).toHaveText("Placing order…");
  await page.unrouteAll({ behavior: "wait" }); // a page request still being fetched is answered first
  await context.setOffline(false);

  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/, { timeout: 15_000 });
  const orders = await ordersOf(page.request);
  expect(orders).toHaveLength(1);
  expect(sent.keys()).toEqual([action.key]);
  await expect(page.getByRole("list", { name: "Your orders" }).getByRole("listitem")).toHaveCount(1);

  // Pressed again with the same cart after all that: a replay of the same order.
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(`Already placed: showing your order #${orders[0]?.orderId}.`);
  expect(await ordersOf(page.request)).toHaveLength(1);
  // Settled, it is no longer kept for a reload.
  await expect.poll(() => persistedMutations(page)).toEqual([]);
});
