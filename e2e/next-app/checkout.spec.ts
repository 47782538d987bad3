/**
 * A new Next.js app's checkout after the README's Server Action section, in Chromium against a real PostgreSQL,
 * with create-next-app's defaults (`cacheComponents` on) and the newest peers a plain install gets: however a user
 * or the network repeats "Place order", with JavaScript or without, one user action places one order.
 */
import { expectOneKeyPerAction, pressRapidly, reloadWhileInFlight, watchMutations } from "@idemkit/playwright";
import { gate } from "@idemkit/testkit";
import { expect, type Page, test } from "@playwright/test";
import { closeDatabase, openCheckout, ordersOf, placeOrderButton, receipt, signIn } from "./checkout.js";

const PLACE_ORDER = { serverActions: { page: "/checkout" } } as const;

let userId: string;
test.beforeEach(async ({ context, baseURL }) => {
  userId = await signIn(context, String(baseURL));
});
test.afterAll(closeDatabase);

/** The first form post reaches the server, which places the order, and its answer is held until a second is sent. */
async function holdFirstAnswerUntilSecondSent(page: Page) {
  const secondSent = gate();
  const firstAnswered = gate();
  let posts = 0;
  await page.route("**/checkout", async (route) => {
    if (route.request().method() !== "POST") return route.continue();
    if (++posts > 1) {
      secondSent.open();
      return route.continue();
    }
    const response = await route.fetch({ maxRedirects: 0 });
    firstAnswered.open();
    await secondSent.opened;
    await route.fulfill({ response }).catch(() => {});
  });
  return { firstAnswered: firstAnswered.opened, posts: () => posts };
}

test.describe("without JavaScript", () => {
  test.use({ javaScriptEnabled: false });

  test("the form sent twice before its answer came places one order, and shows its receipt", async ({ page }) => {
    await openCheckout(page, { hydrated: false });
    const { firstAnswered, posts } = await holdFirstAnswerUntilSecondSent(page);
    // Where the user's pointer is: a locator would wait for the first submission's navigation, a person does not.
    const button = await placeOrderButton(page).boundingBox();
    if (!button) throw new Error("Place order is not on the page");
    const press = () => page.mouse.click(button.x + button.width / 2, button.y + button.height / 2);
    await press();
    await firstAnswered;
    await press();
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    expect(posts()).toBe(2);
    expect(await ordersOf(userId)).toBe(1);
  });

  test("the form sent again after its answer was lost places one order, and is sent to its receipt", async ({
    page,
  }) => {
    await openCheckout(page, { hydrated: false });
    let sent: { body: Buffer; headers: Record<string, string> } | undefined;
    let receiptUrl: string | undefined;
    await page.route("**/checkout", async (route) => {
      const request = route.request();
      if (request.method() !== "POST") return route.continue();
      sent = { body: request.postDataBuffer() ?? Buffer.alloc(0), headers: request.headers() };
      // The server places the order and answers; the answer never reaches the page.
      receiptUrl = (await route.fetch({ maxRedirects: 0 })).headers().location;
      await route.abort("connectionreset");
    });
    await placeOrderButton(page).click();
    await expect.poll(() => receiptUrl).toMatch(/\/orders\/\d+$/);
    // What the browser sends when the user confirms the resubmission: the same form, byte for byte.
    const form = sent as NonNullable<typeof sent>;
    const again = await page.request.post("/checkout", {
      headers: { "content-type": String(form.headers["content-type"]), origin: String(form.headers.origin) },
      data: form.body,
      maxRedirects: 0,
    });
    expect(again.status()).toBe(303);
    expect(again.headers().location).toBe(receiptUrl);
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
});
