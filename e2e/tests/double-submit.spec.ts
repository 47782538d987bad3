/**
 * The whole contract in a real browser against a real database: however the user or the network repeats
 * "Place order", the server holds exactly one order per action.
 */
import {
  expectEffectTimes,
  expectOneKeyPerAction,
  failFirstAttempts,
  goOfflineWhileInFlight,
  loseResponsesAfterCommit,
  pressRapidly,
  reloadWhileInFlight,
  watchMutations,
  whileOffline,
} from "@idemkit/playwright";
import { type APIRequestContext, expect, test } from "@playwright/test";
import superjson from "superjson";
import {
  ACTION_STORAGE_KEY,
  armFaults,
  openCheckout,
  orderList,
  ordersOf,
  PLACE_ORDER_PATH,
  placeOrderButton,
  statusLine,
} from "./checkout-page.js";

test.beforeEach(async ({ page }) => {
  await openCheckout(page);
});

/** The form's mutations: checkout.placeOrder. */
const PLACE_ORDER = { procedure: "checkout.placeOrder" };
/** How many orders the server holds for the page's user: the effect each action must have once. */
const orderCount = (request: APIRequestContext) => async () => (await ordersOf(request)).length;

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
  const sent = watchMutations(page, PLACE_ORDER);
  await placeOrderButton(page).dblclick();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, orderCount(page.request));
  await expect(orderList(page)).toHaveCount(1);
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
  const sent = watchMutations(page, PLACE_ORDER);
  // Three clicks in one task: the button is still enabled for all of them, so only the hook stands between
  // them and three requests.
  await pressRapidly(placeOrderButton(page), 3);
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, orderCount(page.request));
  expect(sent.sent).toHaveLength(1);
});

test("a response lost after the server committed is retried with the same key and shown as already placed", async ({
  page,
}) => {
  const sent = watchMutations(page, PLACE_ORDER);
  await loseResponsesAfterCommit(page, PLACE_ORDER);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, orderCount(page.request));
  expect(sent.sent.map(({ attempt, status, replayed }) => [attempt, status, replayed])).toEqual([
    [1, "failed", false],
    [2, 200, true],
  ]);
  const [order] = await ordersOf(page.request);
  await expect(statusLine(page)).toContainText(`#${order?.orderId}.`);
});

test("a reload while the order is in flight, then pressing again, places one order", async ({ page }) => {
  const sent = watchMutations(page, PLACE_ORDER);
  await reloadWhileInFlight(page, () => placeOrderButton(page).click(), PLACE_ORDER);
  await openCheckout(page);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/, { timeout: 15_000 });
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, orderCount(page.request));
});

test("after a reload mid-order, the page asks what became of it and shows it placed, without sending the cart again", async ({
  page,
}) => {
  // The order is still running at the server when the page comes back, so the page asks again until it is done.
  await armFaults(page.request, { slowMs: 2_000 });
  const sent = watchMutations(page, PLACE_ORDER);
  const lookups: string[] = [];
  page.on("request", (request) => {
    if (new URL(request.url()).pathname.includes("idempotencyOutcome")) lookups.push(request.url());
  });
  await reloadWhileInFlight(page, () => placeOrderButton(page).click(), PLACE_ORDER);
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/, { timeout: 15_000 });
  const [order] = await ordersOf(page.request);
  await expect(statusLine(page)).toHaveText(`Already placed: showing your order #${order?.orderId}.`);
  await expectEffectTimes(sent, orderCount(page.request));
  expect(sent.sent).toHaveLength(1);
  expect(lookups.length).toBeGreaterThan(0);
});

test("a server failure before commit is retried with the same key and places one order", async ({ page }) => {
  await armFaults(page.request, { failBeforeCommit: 1 });
  const sent = watchMutations(page, PLACE_ORDER);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, orderCount(page.request));
  expect(sent.sent.map(({ status }) => status)).toEqual([500, 200]);
  const [order] = await ordersOf(page.request);
  expect(order?.items).toEqual([{ sku: "tea", qty: 1, priceCents: 650 }]);
});

test("a gateway's 502 before the server saw the order is retried with the same key and places one order", async ({
  page,
}) => {
  const sent = watchMutations(page, PLACE_ORDER);
  const gateway = await failFirstAttempts(page, 502, PLACE_ORDER);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, orderCount(page.request));
  expect(gateway.injected).toBe(1);
  expect(sent.sent.map(({ status, injected }) => [status, injected])).toEqual([
    [502, "failFirstAttempts"],
    [200, undefined],
  ]);
});

test("offline before the click: the order waits, then is placed once when the connection is back", async ({
  page,
  context,
}) => {
  const sent = watchMutations(page, PLACE_ORDER);
  await whileOffline(context, async () => {
    await placeOrderButton(page).click();
    await expect(statusLine(page)).toHaveText(/offline/);
    // Nothing is sent while offline; the count at the end shows nothing was sent twice either.
    expect(sent.sent).toHaveLength(0);
  });
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, orderCount(page.request));
  expect(sent.sent).toHaveLength(1);
});

test("offline while the order is on its way: it waits for the connection, then is placed once with its key", async ({
  page,
}) => {
  const sent = watchMutations(page, PLACE_ORDER);
  const { backOnline } = await goOfflineWhileInFlight(page, () => placeOrderButton(page).click(), PLACE_ORDER);
  await expect(statusLine(page)).toHaveText(/offline/);
  await backOnline();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, orderCount(page.request));
  expect(sent.sent.map(({ attempt, status }) => [attempt, status])).toEqual([
    [1, "failed"],
    [2, 200],
  ]);
});

test("the connection lost after the server committed: the page waits offline, then shows the order, placed once", async ({
  page,
}) => {
  const sent = watchMutations(page, PLACE_ORDER);
  const { backOnline } = await goOfflineWhileInFlight(page, () => placeOrderButton(page).click(), {
    ...PLACE_ORDER,
    afterCommit: true,
  });
  await expect(statusLine(page)).toHaveText(/offline/);
  await backOnline();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, orderCount(page.request));
});

test("the same cart again replays; a changed cart is a new order; a key reused for another cart is refused", async ({
  page,
}) => {
  const sent = watchMutations(page, PLACE_ORDER);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Already placed: showing your order #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(1);

  await page.getByRole("button", { name: "Add one Stoneware mug" }).click();
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toHaveText(/^Order placed: #\d+\.$/);
  expect(await ordersOf(page.request)).toHaveLength(2);
  await expectOneKeyPerAction(sent, 2);

  const action = JSON.parse((await page.evaluate((name) => sessionStorage.getItem(name), ACTION_STORAGE_KEY)) ?? "{}");
  expect(action.key).toBe(sent.keys().at(-1));
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
