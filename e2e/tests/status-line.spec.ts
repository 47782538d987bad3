/**
 * What the page tells a shopper, in the moments a new user found it misleading (issue 24): the cart after a
 * reload is the order the status line shows, the wait for the outcome lookup says what it is, a server error is
 * not called a lost connection, and the orders list does not number orders that carry numbers of their own.
 */
import { loseResponsesAfterCommit, reloadWhileInFlight, watchMutations } from "@idemkit/playwright";
import { expect, type Page, test } from "@playwright/test";
import {
  armFaults,
  holdOutcomeLookups,
  openCheckout,
  orderList,
  ordersOf,
  placeOrderButton,
  quantityIn,
  statusLine,
} from "./checkout-page.js";

const PLACE_ORDER = { procedure: "checkout.placeOrder" };

/** Stops the page's clock a little ahead of where it is: timers (the link's retry waits) fire only when told. */
async function pauseClock(page: Page): Promise<void> {
  const pageNow = await page.evaluate(() => Date.now());
  await page.clock.pauseAt(pageNow + 1_000);
}

test("after a reload mid-order, the cart is the order the page shows, and says so once it no longer is", async ({
  page,
}) => {
  await openCheckout(page);
  await page.getByRole("button", { name: "Add one Gooseneck kettle" }).click();
  await reloadWhileInFlight(page, () => placeOrderButton(page).click(), PLACE_ORDER);

  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  const [order] = await ordersOf(page.request);
  expect(order?.items.map(({ sku, qty }) => [sku, qty])).toEqual([
    ["tea", 1],
    ["kettle", 1],
  ]);
  await expect(statusLine(page)).toHaveText(`Already placed: showing your order #${order?.orderId}.`);
  await expect(quantityIn(page, "Green tea")).toHaveText("1");
  await expect(quantityIn(page, "Gooseneck kettle")).toHaveText("1");
  await expect(page.locator(".total")).toHaveText("Total $60.50");

  // The cart changed after the order was placed: the status line no longer speaks as if it showed that order.
  await page.getByRole("button", { name: "Remove one Gooseneck kettle" }).click();
  await expect(statusLine(page)).toHaveText(
    `Order #${order?.orderId} was placed with a different cart; this one is not ordered yet.`,
  );
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(2);
});

test("after a reload mid-order, the page says it is checking, with Place order disabled, until the lookup answers", async ({
  page,
}) => {
  await openCheckout(page);
  const sent = watchMutations(page, PLACE_ORDER);
  const answerLookups = await holdOutcomeLookups(page);
  await reloadWhileInFlight(page, () => placeOrderButton(page).click(), PLACE_ORDER);

  // From the moment the reloaded page finds its order in storage, while the lookup has not answered.
  await expect(statusLine(page)).toHaveText("Checking whether your order went through…");
  await expect(placeOrderButton(page)).toBeDisabled();
  answerLookups();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  await expect(placeOrderButton(page)).toBeEnabled();
  expect(sent.sent).toHaveLength(1);
});

test("a retry after the shop answered 500 says the shop had a problem; a lost answer says the connection was lost", async ({
  page,
}) => {
  await page.clock.install();
  await openCheckout(page);

  await armFaults(page.request, { failBeforeCommit: 1 });
  await pauseClock(page); // the retry waits, and its words stay on screen, until the clock runs again
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^The shop had a problem; trying again in \d+ s…$/);
  await page.clock.resume();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);

  await page.getByRole("button", { name: "Add one Stoneware mug" }).click();
  await loseResponsesAfterCommit(page, PLACE_ORDER);
  await pauseClock(page);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Connection lost, retrying in \d+ s…$/);
  await page.clock.resume();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(2);
});

test("the orders list carries the orders' own numbers, not list numbers beside them", async ({ page }) => {
  await openCheckout(page);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await expect(orderList(page)).toHaveCount(1);
  await expect(orderList(page).first()).toHaveCSS("list-style-type", "none");
  await expect(orderList(page).first()).toContainText(/^Order #\d+/);
});
