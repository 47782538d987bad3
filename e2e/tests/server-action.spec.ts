/**
 * The checkout as a plain form and a Server Action (`/actions`, `@idemkit/next`), in Chromium with JavaScript off:
 * the same rendered form sent twice places one order, and both submissions end on its receipt.
 */
import { gate } from "@idemkit/testkit";
import { expect, test } from "@playwright/test";
import { ordersOf } from "./checkout-page.js";

test.use({ javaScriptEnabled: false });

const placeOrderButton = (page: import("@playwright/test").Page) => page.getByRole("button", { name: "Place order" });

test("without JavaScript, pressing Place order again before the answer came places one order, and shows its receipt", async ({
  page,
}) => {
  await page.goto("/actions");
  const firstAnswered = gate();
  const secondSent = gate();
  let reachedServer = 0;
  await page.route("**/actions", async (route) => {
    if (route.request().method() !== "POST") return route.continue();
    reachedServer++;
    if (reachedServer > 1) {
      secondSent.open();
      return route.continue();
    }
    // The first submission reaches the server, which places the order; its answer is slow to come back.
    const response = await route.fetch({ maxRedirects: 0 });
    firstAnswered.open();
    await secondSent.opened;
    await route.fulfill({ response }).catch(() => {});
  });
  // Where the user's pointer is: a locator would wait for the first submission's navigation, a person does not.
  const button = await placeOrderButton(page).boundingBox();
  if (!button) throw new Error("Place order is not on the page");
  const press = () => page.mouse.click(button.x + button.width / 2, button.y + button.height / 2);
  await press();
  await firstAnswered.opened;
  // The page still shows the form: the user presses again, and the browser sends the same form once more.
  await press();
  await expect(page.getByRole("status")).toHaveText(/^Order #\d+ placed\.$/);
  expect(reachedServer).toBe(2);
  expect(await ordersOf(page.request)).toHaveLength(1);
});

test("without JavaScript, the form sent again after its answer was lost places one order, and is sent to its receipt", async ({
  page,
}) => {
  await page.goto("/actions");
  let sent: { body: Buffer; headers: Record<string, string> } | undefined;
  let receipt: string | undefined;
  await page.route("**/actions", async (route) => {
    const request = route.request();
    if (request.method() !== "POST") return route.continue();
    sent = { body: request.postDataBuffer() ?? Buffer.alloc(0), headers: request.headers() };
    // The server runs the action and answers; the answer never reaches the page.
    receipt = (await route.fetch({ maxRedirects: 0 })).headers().location;
    await route.abort("connectionreset");
  });
  await placeOrderButton(page).click();
  await expect.poll(() => receipt).toMatch(/\/actions\?placed=\d+$/);
  await page.unroute("**/actions");
  const form = sent as NonNullable<typeof sent>;
  const again = await page.request.post("/actions", {
    headers: { "content-type": String(form.headers["content-type"]), origin: String(form.headers.origin) },
    data: form.body,
    maxRedirects: 0,
  });
  expect(again.status()).toBe(303);
  expect(again.headers().location).toBe(receipt);
  expect(await ordersOf(page.request)).toHaveLength(1);
});
