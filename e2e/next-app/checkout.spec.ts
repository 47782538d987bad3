/**
 * A new Next.js app's checkout after the README's Server Action quickstart, in Chromium against a real PostgreSQL,
 * with create-next-app's defaults (`cacheComponents` on) and the newest peers a plain install gets: however a user
 * or the network repeats "Place order", with JavaScript or without, one user action places one order. The app has
 * Next.js's `experimental.useOffline` on, so Next.js itself sends an action again that the network dropped.
 */
import {
  expectOneKeyPerAction,
  goOfflineWhileInFlight,
  pressRapidly,
  reloadWhileInFlight,
  watchMutations,
} from "@idemkit/playwright";
import { expect, test } from "@playwright/test";
import { holdFirstAnswerUntilSecondSent, pointerOn, sentAgainAfterLostAnswer } from "../form-posts.js";
import { closeDatabase, openCheckout, ordersOf, placeOrderButton, receipt, signIn } from "./checkout.js";

const PLACE_ORDER = { serverActions: { page: "/checkout" } } as const;

let userId: string;
test.beforeEach(async ({ context, baseURL }) => {
  userId = await signIn(context, String(baseURL));
});
test.afterAll(closeDatabase);

test.describe("without JavaScript", () => {
  test.use({ javaScriptEnabled: false });

  test("the form sent twice before its answer came places one order, and shows its receipt", async ({ page }) => {
    await openCheckout(page, { hydrated: false });
    const { firstAnswered, reachedServer } = await holdFirstAnswerUntilSecondSent(page, "/checkout");
    const press = await pointerOn(placeOrderButton(page));
    await press();
    await firstAnswered;
    await press();
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    expect(reachedServer()).toBe(2);
    expect(await ordersOf(userId)).toBe(1);
  });

  test("the form sent again after its answer was lost places one order, and is sent to its receipt", async ({
    page,
  }) => {
    await openCheckout(page, { hydrated: false });
    const { lostLocation, again } = await sentAgainAfterLostAnswer(page, "/checkout", placeOrderButton(page));
    expect(lostLocation).toMatch(/\/orders\/\d+$/);
    expect(again.status()).toBe(303);
    expect(again.headers().location).toBe(lostLocation);
    expect(await ordersOf(userId)).toBe(1);
  });
});

test.describe("with JavaScript", () => {
  test("a double click places one order, sent once, and shows its receipt", async ({ page }) => {
    await openCheckout(page, { hydrated: true });
    const sent = watchMutations(page, PLACE_ORDER);
    await pressRapidly(placeOrderButton(page));
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    await expectOneKeyPerAction(sent);
    expect(sent.sent).toHaveLength(1);
    expect(await ordersOf(userId)).toBe(1);
  });

  test("a reload before the answer came finds the order it placed, and shows its receipt", async ({ page }) => {
    await openCheckout(page, { hydrated: true });
    const sent = watchMutations(page, PLACE_ORDER);
    await reloadWhileInFlight(page, () => placeOrderButton(page).click(), PLACE_ORDER);
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    await expectOneKeyPerAction(sent);
    expect(await ordersOf(userId)).toBe(1);
  });

  test("the connection dropped after the order committed: sent again when it is back, the same order, placed once", async ({
    page,
  }) => {
    await openCheckout(page, { hydrated: true });
    const sent = watchMutations(page, PLACE_ORDER);
    const { backOnline } = await goOfflineWhileInFlight(page, () => placeOrderButton(page).click(), {
      ...PLACE_ORDER,
      afterCommit: true,
    });
    expect(await ordersOf(userId)).toBe(1);
    await backOnline();
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    expect(sent.sent.length).toBeGreaterThanOrEqual(2);
    await expectOneKeyPerAction(sent);
    expect(await ordersOf(userId)).toBe(1);
  });
});
