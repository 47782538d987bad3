/**
 * The example of docs/testing.md, as the guide shows it (the region below, which
 * tooling/packaging/test/readme-snippets.test.ts holds it to), run against the demo's checkout: what a user copies
 * is a test that passes.
 */
// #region test-your-own-form
import {
  expectEffectTimes,
  expectOneKeyPerAction,
  loseResponsesAfterCommit,
  pressRapidly,
  watchMutations,
} from "@idemkit/playwright";
import { expect, test } from "@playwright/test";

test("ordering twice places one order", async ({ page }) => {
  await page.goto("/");
  // The products come from the API once the page is hydrated: then the button is the app's, not inert HTML.
  await expect(page.getByRole("button", { name: "Add one Green tea, 100 g" })).toBeVisible();
  // How many orders the server holds for this user (the page's cookie), read from its API.
  const orders = async () => {
    const response = await page.request.get("/api/trpc/checkout.orders");
    return (await response.json()).result.data.json.length; // superjson's envelope
  };
  const before = await orders();
  const sent = watchMutations(page, { procedure: "checkout.placeOrder" });
  await loseResponsesAfterCommit(page, { procedure: "checkout.placeOrder" }); // the first answer never arrives
  await pressRapidly(page.getByRole("button", { name: "Place order" }), 2); // two presses before React re-renders
  await expect(page.getByRole("status")).toHaveText(/Already placed/); // the retry was answered with the order
  await expectOneKeyPerAction(sent); // every press and retry carried the same key
  await expectEffectTimes(sent, orders, { before }); // and the server placed one order
});
// #endregion test-your-own-form
