/**
 * The whole contract in a real browser against a real database: however the user or the network repeats
 * "Place order", the server holds exactly one order per action.
 */
import { expect, test } from "@playwright/test";
import superjson from "superjson";
import {
  ACTION_STORAGE_KEY,
  armFaults,
  isPlaceOrder,
  openCheckout,
  orderList,
  ordersOf,
  PLACE_ORDER_PATH,
  placeOrderButton,
  recordKeys,
  statusLine,
} from "./checkout-page.js";

test.beforeEach(async ({ page }) => {
  await openCheckout(page);
});

test("the page loads without a failed request, its icon included", async ({ page }) => {
  const failed: string[] = [];
  page.on("response", (response) => {
    if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
  });
  await page.reload();
  await expect(page.getByRole("button", { name: "Add one Stoneware mug" })).toBeVisible();
  const icon = await page.locator('link[rel="icon"]').first().getAttribute("href");
  expect(icon).toBeTruthy();
  expect((await page.request.get(String(icon))).status()).toBe(200);
  expect(failed).toEqual([]);
});

test("the instance says it is ready once its database is open", async ({ request }) => {
  const response = await request.get("/api/health");
  expect(response.status()).toBe(200);
  expect(await response.json()).toEqual({ status: "ready" });
});

test("an API call without the uid cookie is refused, not taken for a new user whose retries each place an order", async ({
  request,
}) => {
  const response = await request.post(PLACE_ORDER_PATH, {
    headers: { "content-type": "application/json", "idempotency-key": globalThis.crypto.randomUUID() },
    data: superjson.serialize({ items: [{ sku: "tea", qty: 1 }] }),
  });
  expect(response.status()).toBe(401);
  expect(response.headers()["set-cookie"]).toBeUndefined();
});

test("a double click places one order", async ({ page }) => {
  const keys = recordKeys(page);
  await placeOrderButton(page).dblclick();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(1);
  await expect(orderList(page)).toHaveCount(1);
  expect(keys).toHaveLength(1);
});

test("a double-submitted order gets its confirmation, once", async ({ page }) => {
  await placeOrderButton(page).dblclick();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  // Sent after the order committed, by the app itself (PGlite) or by `npm run worker` (PostgreSQL).
  await expect(orderList(page)).toHaveCount(1);
  await expect(orderList(page).first()).toContainText("Confirmation sent");
  expect((await ordersOf(page.request)).map((order) => order.confirmationsSent)).toEqual([1]);
});

test("three clicks faster than React can disable the button place one order", async ({ page }) => {
  const keys = recordKeys(page);
  // Three clicks in one task: the button is still enabled for all of them, so only the hook stands between
  // them and three requests.
  await placeOrderButton(page).evaluate((button: HTMLButtonElement) => {
    button.click();
    button.click();
    button.click();
  });
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(1);
  expect(keys).toHaveLength(1);
});

test("a response lost after the server committed is retried with the same key and shown as already placed", async ({
  page,
}) => {
  const keys = recordKeys(page);
  let dropped = false;
  await page.route(
    (url) => url.pathname === PLACE_ORDER_PATH,
    async (route) => {
      if (dropped) return route.fallback();
      dropped = true;
      const answer = await route.fetch(); // the server runs the order and commits it
      expect(answer.status()).toBe(200);
      await route.abort("connectionreset"); // ...and the browser never hears back
    },
  );
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  const orders = await ordersOf(page.request);
  expect(orders).toHaveLength(1);
  await expect(statusLine(page)).toContainText(`#${orders[0]?.orderId}.`);
  expect(keys).toHaveLength(2);
  expect(keys[1]).toBe(keys[0]);
});

test("a reload while the order is in flight, then pressing again, places one order", async ({ page }) => {
  await armFaults(page.request, { slowMs: 2_000 });
  const keys = recordKeys(page);
  const sent = page.waitForRequest(isPlaceOrder);
  await placeOrderButton(page).click();
  await sent;
  await page.reload();
  await openCheckout(page);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/, { timeout: 15_000 });
  expect(await ordersOf(page.request)).toHaveLength(1);
  expect(keys).toHaveLength(2);
  expect(keys[1]).toBe(keys[0]);
});

test("after a reload mid-order, the page asks what became of it and shows it placed, without sending the cart again", async ({
  page,
}) => {
  await armFaults(page.request, { slowMs: 2_000 });
  const keys = recordKeys(page);
  const lookups: string[] = [];
  page.on("request", (request) => {
    if (new URL(request.url()).pathname.includes("idempotencyOutcome")) lookups.push(request.url());
  });
  const sent = page.waitForRequest(isPlaceOrder);
  await placeOrderButton(page).click();
  await sent;
  await page.reload();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/, { timeout: 15_000 });
  const [order] = await ordersOf(page.request);
  await expect(statusLine(page)).toHaveText(`Already placed: showing your order #${order?.orderId}.`);
  expect(await ordersOf(page.request)).toHaveLength(1);
  expect(keys).toHaveLength(1);
  expect(lookups.length).toBeGreaterThan(0);
});

test("a server failure before commit is retried with the same key and places one order", async ({ page }) => {
  await armFaults(page.request, { failBeforeCommit: 1 });
  const keys = recordKeys(page);
  const statuses: number[] = [];
  page.on("response", (response) => {
    if (isPlaceOrder(response.request())) statuses.push(response.status());
  });
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  expect(statuses).toEqual([500, 200]);
  expect(keys).toHaveLength(2);
  expect(keys[1]).toBe(keys[0]);
  const [order] = await ordersOf(page.request);
  expect(order?.items).toEqual([{ sku: "tea", qty: 1, priceCents: 650 }]);
  expect(await ordersOf(page.request)).toHaveLength(1);
});

test("offline before the click: the order waits, then is placed once when the connection is back", async ({
  page,
  context,
}) => {
  const keys = recordKeys(page);
  await context.setOffline(true);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/offline/);
  // Nothing was sent while offline; the count at the end shows nothing was sent twice either.
  expect(keys).toHaveLength(0);
  await context.setOffline(false);
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(1);
  expect(keys).toHaveLength(1);
});

test("the same cart again replays; a changed cart is a new order; a key reused for another cart is refused", async ({
  page,
}) => {
  const keys = recordKeys(page);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(1);

  await page.getByRole("button", { name: "Add one Stoneware mug" }).click();
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(2);
  expect(new Set(keys).size).toBe(2);

  const action = JSON.parse((await page.evaluate((name) => sessionStorage.getItem(name), ACTION_STORAGE_KEY)) ?? "{}");
  expect(action.key).toBe(keys.at(-1));
  const reused = await page.request.post(PLACE_ORDER_PATH, {
    headers: { "content-type": "application/json", "idempotency-key": action.key },
    data: JSON.stringify(superjson.serialize({ items: [{ sku: "kettle", qty: 3 }] })),
  });
  expect(reused.status()).toBe(422);
  expect((await reused.json()).error.json.data.idempotency).toMatchObject({ code: "FINGERPRINT_MISMATCH" });
  expect(await ordersOf(page.request)).toHaveLength(2);
});

test("two users never see each other's orders", async ({ browser, baseURL }) => {
  const options = baseURL === undefined ? {} : { baseURL };
  const alice = await browser.newContext(options);
  const bob = await browser.newContext(options);
  try {
    const [alicePage, bobPage] = await Promise.all([alice.newPage(), bob.newPage()]);
    await Promise.all([openCheckout(alicePage), openCheckout(bobPage)]);
    await bobPage.getByRole("button", { name: "Add one Gooseneck kettle" }).click();
    await Promise.all([placeOrderButton(alicePage).click(), placeOrderButton(bobPage).click()]);
    await expect(statusLine(alicePage)).toHaveText(/^Order placed/);
    await expect(statusLine(bobPage)).toHaveText(/^Order placed/);

    const [aliceOrders, bobOrders] = await Promise.all([ordersOf(alicePage.request), ordersOf(bobPage.request)]);
    expect(aliceOrders).toHaveLength(1);
    expect(bobOrders).toHaveLength(1);
    expect(aliceOrders[0]?.orderId).not.toBe(bobOrders[0]?.orderId);
    await expect(orderList(alicePage)).toHaveCount(1);
    await expect(orderList(alicePage)).toContainText(`Order #${aliceOrders[0]?.orderId}`);
    await expect(orderList(bobPage)).toContainText("kettle");
    await expect(orderList(alicePage)).not.toContainText("kettle");
  } finally {
    await Promise.all([alice.close(), bob.close()]);
  }
});
