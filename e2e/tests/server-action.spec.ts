/**
 * The checkout as a Server Action form (`/actions`, `@idemkit/next`), in Chromium, on PGlite and PostgreSQL: each
 * user action places one order, and ends on its receipt. Without JavaScript the key is the field the server
 * rendered into the form; with it, `useIdempotentActionState` keeps one per user action across a double click, a
 * lost answer and a reload. The submissions are watched with `@idemkit/playwright`, as a user would test their own.
 */
import {
  expectOneKeyPerAction,
  loseResponsesAfterCommit,
  pressRapidly,
  reloadWhileInFlight,
  watchMutations,
} from "@idemkit/playwright";
import { expect, type Page, test } from "@playwright/test";
import { holdFirstAnswerUntilSecondSent, pointerOn, sentAgainAfterLostAnswer } from "../form-posts.js";
import { armFaults, ordersHeld, ordersOf } from "./checkout-page.js";

const placeOrderButton = (page: Page) => page.getByRole("button", { name: "Place order" });
const receipt = (page: Page) => page.getByRole("status");
/** The page's Server Action submissions, as @idemkit/playwright finds them. */
const PLACE_ORDER = { serverActions: { page: "/actions" } } as const;

test.describe("without JavaScript", () => {
  test.use({ javaScriptEnabled: false });

  test("without JavaScript, pressing Place order again before the answer came places one order, and shows its receipt", async ({
    page,
  }) => {
    await page.goto("/actions");
    const { firstAnswered, reachedServer } = await holdFirstAnswerUntilSecondSent(page, "/actions");
    const press = await pointerOn(placeOrderButton(page));
    await press();
    await firstAnswered;
    // The page still shows the form: the user presses again, and the browser sends the same form once more.
    await press();
    await expect(page.getByRole("status")).toHaveText(/^Order #\d+ placed\.$/);
    expect(reachedServer()).toBe(2);
    expect(await ordersOf(page.request)).toHaveLength(1);
  });

  test("without JavaScript, the form sent again after its answer was lost places one order, and is sent to its receipt", async ({
    page,
  }) => {
    await page.goto("/actions");
    const { lostLocation, again } = await sentAgainAfterLostAnswer(page, "/actions", placeOrderButton(page));
    expect(lostLocation).toMatch(/\/actions\?placed=\d+$/);
    expect(again.status()).toBe(303);
    expect(again.headers().location).toBe(lostLocation);
    expect(await ordersOf(page.request)).toHaveLength(1);
  });

  test("without JavaScript, the same form sent again with other values while its order is on its way is refused, and says so", async ({
    page,
  }) => {
    await page.goto("/actions");
    const sent = watchMutations(page, PLACE_ORDER);
    const { firstAnswered } = await holdFirstAnswerUntilSecondSent(page, "/actions");
    // By the pointer and the keyboard, as a person does while the first submission's navigation is on its way.
    const [pressQuantity, press] = [
      await pointerOn(page.getByLabel("Quantity")),
      await pointerOn(placeOrderButton(page)),
    ];
    await press();
    await firstAnswered;
    // The page still shows the form the first order went with: the user changes it and sends it again.
    await pressQuantity();
    await page.keyboard.press("ControlOrMeta+A");
    await page.keyboard.type("2");
    await press();
    await expect(page.getByRole("alert")).toHaveText(/already sent with other values/);
    await expectOneKeyPerAction(sent);
    expect(await ordersOf(page.request)).toHaveLength(1);
  });
});

test.describe("without JavaScript, a refusal keeps the order", () => {
  test.use({ javaScriptEnabled: false });

  test("a second press refused while the first still runs asks to send it again: that press is the same order, placed once", async ({
    page,
  }, testInfo) => {
    // The first order must outlast the duplicate's wait (5 s) holding its transaction: PGlite has one connection,
    // and every other test on it would wait as long. PostgreSQL's pool has others.
    test.skip(testInfo.project.name === "pglite", "an order held past waitMs would stall the other tests on PGlite");
    await page.goto("/actions");
    await armFaults(page.request, { slowMs: 8_000 });
    await page.getByLabel("Quantity").fill("3");
    const press = await pointerOn(placeOrderButton(page));
    await press();
    await expect.poll(() => ordersHeld(page.request)).toBe(1);
    // Pressed again while the first order runs: this one waits for it, then is refused, and the page renders anew.
    await press();
    await expect(page.getByRole("alert")).toHaveText(
      "This form is still being sent. Send it again in a moment: it will not be done twice.",
      { timeout: 15_000 },
    );
    await expect(page.getByLabel("Quantity")).toHaveValue("3");
    await expect.poll(() => ordersOf(page.request), { timeout: 15_000 }).toHaveLength(1);
    // The press the message asks for: the page's form now carries the first order's key, so it is that order.
    await placeOrderButton(page).click();
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    const orders = await ordersOf(page.request);
    expect(orders).toHaveLength(1);
    expect(orders[0]?.items).toMatchObject([{ qty: 3 }]);
  });

  test("a lease-mode payment whose answer could not be recorded is said to have maybe gone through, and the press it asks for only checks: one charge, and its receipt", async ({
    page,
  }) => {
    const payNow = page.getByRole("button", { name: "Pay now" });
    await page.goto("/actions/express");
    // The payment is made, and the store fails each time the engine tries to keep its answer while the user waits.
    await armFaults(page.request, { failCompletions: 3 });
    await payNow.click();
    await expect(page.getByRole("alert")).toHaveText(
      "This was received and may have gone through, but it could not be confirmed just now. Press the button again " +
        "in a moment to check how it ended: that only checks, and sends nothing twice.",
    );
    expect(await ordersOf(page.request)).toHaveLength(1);
    // The press the page asks for, as often as it asks: each is a check of the same key, never a second payment.
    await expect(async () => {
      await payNow.click();
      await expect(receipt(page)).toHaveText(/^Paid, order #\d+\.$/, { timeout: 2_000 });
    }).toPass({ timeout: 20_000 });
    expect(await ordersOf(page.request)).toHaveLength(1);
  });

  test("an order whose outcome is unknown is said so, and sending the form again finds it: one order, and its receipt", async ({
    page,
  }) => {
    await page.goto("/actions");
    await armFaults(page.request, { loseCommitAnswer: 1 });
    await page.getByLabel("Quantity").fill("2");
    await placeOrderButton(page).click();
    await expect(page.getByRole("alert")).toHaveText(
      "We could not confirm whether this went through. Send the form again to check: it will not be done twice.",
    );
    // It did go through: the page must not invite a second order under a new key.
    expect(await ordersOf(page.request)).toHaveLength(1);
    await expect(page.getByLabel("Quantity")).toHaveValue("2");
    await placeOrderButton(page).click();
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    const orders = await ordersOf(page.request);
    expect(orders).toHaveLength(1);
    await expect(receipt(page)).toHaveText(`Order #${orders[0]?.orderId} placed.`);
  });
});

test.describe("with JavaScript", () => {
  /** Opens the form and waits until the page runs it (the demo marks its form then): a press before is a form post. */
  async function openForm(page: Page): Promise<void> {
    await page.goto("/actions");
    await expect(page.locator('form[aria-label="Order"][data-ready]')).toBeVisible();
  }

  test("a double click places one order, sent once, and shows its receipt", async ({ page }) => {
    await openForm(page);
    const sent = watchMutations(page, PLACE_ORDER);
    await pressRapidly(placeOrderButton(page));
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    await expectOneKeyPerAction(sent);
    expect(sent.sent).toHaveLength(1);
    expect(await ordersOf(page.request)).toHaveLength(1);
  });

  test("an answer lost after the order was placed is asked for again with its key: one order, and its receipt", async ({
    page,
  }) => {
    await openForm(page);
    const sent = watchMutations(page, PLACE_ORDER);
    await loseResponsesAfterCommit(page, PLACE_ORDER);
    await placeOrderButton(page).click();
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    await expectOneKeyPerAction(sent);
    expect(sent.sent.length).toBeGreaterThan(1);
    expect(await ordersOf(page.request)).toHaveLength(1);
  });

  test("a reload before the answer came finds the order it placed, and shows its receipt", async ({ page }) => {
    await openForm(page);
    const sent = watchMutations(page, PLACE_ORDER);
    await reloadWhileInFlight(page, () => placeOrderButton(page).click(), PLACE_ORDER);
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    await expectOneKeyPerAction(sent);
    expect(await ordersOf(page.request)).toHaveLength(1);
  });

  test("after a receipt, the next press is a new order", async ({ page }) => {
    await openForm(page);
    await placeOrderButton(page).click();
    await expect(receipt(page)).toHaveText(/^Order #\d+ placed\.$/);
    const first = await receipt(page).textContent();
    await placeOrderButton(page).click();
    await expect(receipt(page)).not.toHaveText(first ?? "");
    expect(await ordersOf(page.request)).toHaveLength(2);
  });
});
