/**
 * The README's tRPC quickstart as a new app has it (next-app/prepare.ts): its page, built by `next build` with
 * create-next-app's defaults (`cacheComponents` on), whose button uses `useIdempotentMutation` through
 * `@trpc/tanstack-react-query`, in Chromium against a real PostgreSQL. However a user repeats "Place order" (a double
 * click, three quick presses, a reload before the answer came and a press after it), one action places one order.
 */
import { expectOneKeyPerAction, pressRapidly, reloadWhileInFlight, watchMutations } from "@idemkit/playwright";
import { expect, type Page, test } from "@playwright/test";
import { closeDatabase, ordersOf, placeOrderButton, receipt } from "./checkout.js";

const PLACE_ORDER = { procedure: "placeOrder" } as const;

let userId: string;
test.beforeEach(async ({ context }) => {
  // The quickstart's route reads its user from this header (its stand-in for a session).
  userId = globalThis.crypto.randomUUID();
  await context.setExtraHTTPHeaders({ "x-user": userId });
});
test.afterAll(closeDatabase);

/** Opens the quickstart's page. */
async function openOrderPage(page: Page): Promise<void> {
  await page.goto("/order");
  await hydrated(page);
}

/** Waits until React runs the page's button: a press before would be a plain form post to the page. */
async function hydrated(page: Page): Promise<void> {
  const button = placeOrderButton(page);
  await expect(button).toBeVisible();
  await expect
    .poll(() => button.evaluate((element) => Object.keys(element).some((key) => key.startsWith("__reactProps"))))
    .toBe(true);
}

test("the page is prerendered with its button: the hook draws nothing while React renders", async ({ request }) => {
  const page = await request.get("/order");
  expect(page.status()).toBe(200);
  // Served from what `next build` prerendered, not rendered for this request (a dynamic page has its button too).
  expect(page.headers()["x-nextjs-prerender"]?.split(", ")).toContain("1");
  expect(await page.text()).toMatch(/<button type="submit">Place order<\/button>/);
});

for (const presses of [2, 3]) {
  test(`${presses} quick presses place one order, sent once with one key`, async ({ page }) => {
    await openOrderPage(page);
    const sent = watchMutations(page, PLACE_ORDER);
    await pressRapidly(placeOrderButton(page), presses);
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    await expectOneKeyPerAction(sent);
    expect(sent.sent).toHaveLength(1);
    expect(await ordersOf(userId)).toBe(1);
  });
}

test("a reload before the answer came, then a press: the same order, placed once", async ({ page }) => {
  await openOrderPage(page);
  const sent = watchMutations(page, PLACE_ORDER);
  await reloadWhileInFlight(page, () => placeOrderButton(page).click(), PLACE_ORDER);
  await expect.poll(() => ordersOf(userId)).toBe(1);
  await hydrated(page);
  await placeOrderButton(page).click();
  await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
  await expectOneKeyPerAction(sent);
  expect(sent.sent).toHaveLength(2);
  expect(await ordersOf(userId)).toBe(1);
});
