/**
 * Tabs in a real browser: two tabs pressing "Place order" on the same cart at once place one order, the second
 * saying it waits and sending only once the first has its answer, or once its wait ran out (then with the first's
 * key); a tab the browser duplicates (its sessionStorage copied) starts with
 * none of the original's actions, and joins the original's order only while it is in flight, as any tab would.
 */
import { expect, type Page, test } from "@playwright/test";
import {
  ACTION_STORAGE_KEY,
  isPlaceOrder,
  openCheckout,
  ordersOf,
  placeOrderButton,
  statusLine,
} from "./checkout-page.js";

/** What each tab sent and heard for checkout.placeOrder, in the order the browser saw it. */
function recordTimeline(tabs: Record<string, Page>): string[] {
  const timeline: string[] = [];
  for (const [name, tab] of Object.entries(tabs)) {
    tab.on("request", (request) => {
      if (isPlaceOrder(request)) timeline.push(`${name} sent ${request.headers()["idempotency-key"]}`);
    });
    tab.on("response", (response) => {
      if (isPlaceOrder(response.request())) timeline.push(`${name} heard ${response.status()}`);
    });
  }
  return timeline;
}

/** Opens a copy of `page` as the browser's "Duplicate tab" does: same address, sessionStorage copied. */
async function duplicate(page: Page): Promise<Page> {
  const [copy] = await Promise.all([page.waitForEvent("popup"), page.evaluate(() => window.open(location.href))]);
  await expect(copy.getByRole("button", { name: "Add one Stoneware mug" })).toBeVisible();
  return copy;
}

/** Holds `page`'s placeOrder requests in the browser until `release()`: its order stays in flight meanwhile. */
async function holdOrders(page: Page): Promise<() => void> {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route(
    (url) => url.pathname === "/api/trpc/checkout.placeOrder",
    async (route) => {
      await released;
      await route.continue();
    },
  );
  return release;
}

const tabIdOf = (page: Page) => page.evaluate(() => sessionStorage.getItem("idemkit-tab"));

/** What a tab waiting for another tab's order says, with its countdown. */
const WAITING_FOR_TAB = /^Another tab is placing this order: waiting for it \(\d+ s\)…$/;

test("two tabs pressing Place order on the same cart at once place one order; the second waits and replays", async ({
  page,
  context,
}) => {
  const other = await context.newPage();
  await openCheckout(page);
  await openCheckout(other);
  const release = await holdOrders(page);
  const timeline = recordTimeline({ first: page, second: other });

  const sent = page.waitForRequest(isPlaceOrder);
  await placeOrderButton(page).click();
  const key = (await sent).headers()["idempotency-key"];
  await placeOrderButton(other).click();
  await expect(statusLine(other)).toHaveText(WAITING_FOR_TAB);
  release();

  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await expect(statusLine(other)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  const orders = await ordersOf(page.request);
  expect(orders).toHaveLength(1);
  await expect(statusLine(other)).toContainText(`#${orders[0]?.orderId}.`);
  expect(timeline).toEqual([`first sent ${key}`, "first heard 200", `second sent ${key}`, "second heard 200"]);
});

test("a tab waits 10 s at most for another tab's order on the same cart, then sends with its key: one order", async ({
  page,
  context,
}) => {
  const other = await context.newPage();
  await other.clock.install(); // the second tab's clock runs, and the test can jump it past the wait
  await openCheckout(page);
  await openCheckout(other);
  const release = await holdOrders(page); // the first tab's request hangs on its way
  const timeline = recordTimeline({ first: page, second: other });

  const sent = page.waitForRequest(isPlaceOrder);
  await placeOrderButton(page).click();
  const key = (await sent).headers()["idempotency-key"];
  await placeOrderButton(other).click();
  await expect(statusLine(other)).toHaveText(WAITING_FOR_TAB);
  expect(timeline).toEqual([`first sent ${key}`]);

  const secondSent = other.waitForRequest(isPlaceOrder);
  await other.clock.fastForward(10_000);
  expect((await secondSent).headers()["idempotency-key"]).toBe(key);
  // The second tab's request reached the server first and placed the order; the first's, let go, replays it.
  await expect(statusLine(other)).toHaveText(/^Order placed: #\d+\.$/);
  release();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  const orders = await ordersOf(page.request);
  expect(orders).toHaveLength(1);
  await expect(statusLine(page)).toContainText(`#${orders[0]?.orderId}.`);
  await expect(statusLine(other)).toContainText(`#${orders[0]?.orderId}.`);
});

test("a duplicated tab starts without the original's action, and joins it only while it is in flight", async ({
  page,
}) => {
  await openCheckout(page);
  const release = await holdOrders(page);
  const lookups: string[] = [];
  const sent = page.waitForRequest(isPlaceOrder);
  await placeOrderButton(page).click();
  const key = (await sent).headers()["idempotency-key"];

  const copy = await duplicate(page);
  copy.on("request", (request) => {
    if (request.url().includes("idempotencyOutcome")) lookups.push(request.url());
  });
  const copied = await copy.evaluate((name) => sessionStorage.getItem(name), ACTION_STORAGE_KEY);
  expect(copied).toContain(String(key)); // the browser copied the original's action...
  const originalTab = await tabIdOf(page);
  await expect.poll(() => tabIdOf(copy)).not.toBe(originalTab); // ...and the copy finds it is another tab
  // So it does not take the original's action for its own: no key, nothing shown, nothing asked.
  await expect(statusLine(page)).toHaveAttribute("data-idempotency-key", String(key));
  await expect(statusLine(copy)).not.toHaveAttribute("data-idempotency-key");
  await expect(statusLine(copy)).toHaveText("");
  expect(lookups).toEqual([]);
  // Still so after the copy reloads: it keeps its own id, and knows which tab it was copied from.
  const copyTab = await tabIdOf(copy);
  await copy.reload();
  await expect(copy.getByRole("button", { name: "Add one Stoneware mug" })).toBeVisible();
  expect(await tabIdOf(copy)).toBe(copyTab);
  await expect(statusLine(copy)).not.toHaveAttribute("data-idempotency-key");

  // Pressed while the original's order is in flight, on the same cart: the same order.
  const copyKeys: string[] = [];
  copy.on("request", (request) => {
    if (isPlaceOrder(request)) copyKeys.push(String(request.headers()["idempotency-key"]));
  });
  await placeOrderButton(copy).click();
  await expect(statusLine(copy)).toHaveText(WAITING_FOR_TAB);
  expect(copyKeys).toEqual([]); // it waits for the original's answer
  release();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await expect(statusLine(copy)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  expect(copyKeys).toEqual([key]);
  expect(await ordersOf(page.request)).toHaveLength(1);

  // A copy made once the order is placed presses on its own behalf: a new order, not the original's replayed.
  const later = await duplicate(page);
  await expect.poll(() => tabIdOf(later)).not.toBe(originalTab);
  await expect(statusLine(later)).not.toHaveAttribute("data-idempotency-key");
  await placeOrderButton(later).click();
  await expect(statusLine(later)).toHaveText(/^Order placed: #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(2);
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
});
