/**
 * @idemkit/playwright's own contract: its assertions fail, and say what was sent, when a form breaks the double-
 * submit contract. The broken forms are pages of the demo's origin (so they carry the user's cookie) that call
 * the real checkout.placeOrder on the real server; only their client is wrong.
 */
import {
  DoubleSubmitError,
  expectEffectTimes,
  expectOneKeyPerAction,
  pressRapidly,
  watchMutations,
} from "@idemkit/playwright";
import { expect, type Page, test } from "@playwright/test";
import { openCheckout, ordersOf } from "./checkout-page.js";

/**
 * Serves a one-button form at /broken-form whose press posts the order with the headers `keyPerPress` gives;
 * "one key, debounced" is a correct form that sends its one key 100 ms after the press.
 */
async function openBrokenForm(
  page: Page,
  keyPerPress: "new key per press" | "no key" | "one key, debounced",
): Promise<void> {
  await openCheckout(page); // the user's cookie
  const key = {
    "no key": "{}",
    "new key per press": `{ "idempotency-key": crypto.randomUUID() }`,
    "one key, debounced": `{ "idempotency-key": oneKey }`,
  }[keyPerPress];
  const delayMs = keyPerPress === "one key, debounced" ? 100 : 0;
  await page.route("**/broken-form", (route) =>
    route.fulfill({
      contentType: "text/html",
      body: `<!doctype html><button>Pay</button><script>
        const oneKey = crypto.randomUUID();
        const send = () => fetch("/api/trpc/checkout.placeOrder", {
          method: "POST",
          headers: { "content-type": "application/json", ...${key} },
          body: JSON.stringify({ json: { items: [{ sku: "tea", qty: 1 }] } }),
        });
        document.querySelector("button").onclick = () => (${delayMs} ? setTimeout(send, ${delayMs}) : send());
      </script>`,
    }),
  );
  await page.goto("/broken-form");
}

const orderCount = (page: Page) => async () => (await ordersOf(page.request)).length;

test("a form that mints a new key per press fails expectOneKeyPerAction, and the message says so and lists the keys", async ({
  page,
}) => {
  await openBrokenForm(page, "new key per press");
  const sent = watchMutations(page, { procedure: "checkout.placeOrder" });
  await pressRapidly(page.getByRole("button", { name: "Pay" }), 2);

  const failure = await expectOneKeyPerAction(sent).catch((error: unknown) => error);
  expect(failure).toBeInstanceOf(DoubleSubmitError);
  const message = String((failure as Error).message);
  expect(message).toContain("the page sent 2 keys: it mints a new key per press or per retry");
  for (const key of sent.keys()) expect(message).toContain(key);
  expect(message).toMatch(/1\. checkout\.placeOrder {2}key \S+ {2}attempt 1 {2}→ 200/);

  // And the effect: two orders, for one action.
  await expect(expectEffectTimes(sent, orderCount(page))).rejects.toThrow(
    /Expected the effect 1 time\(s\), but it happened 2 time\(s\) \(count 2, before 0\): repeats ran again instead of replaying/,
  );
});

test("a press made long after the watch began, and sent a moment later, is still seen", async ({ page }) => {
  await openBrokenForm(page, "one key, debounced");
  const sent = watchMutations(page, { procedure: "checkout.placeOrder" });
  // The user reads the page for longer than the log's quiet period before pressing: on a loaded machine a press
  // can take as long to hand back. The quiet period counts from the assertion, so the request is not missed.
  await page.waitForTimeout(600);
  await page.getByRole("button", { name: "Pay" }).click();

  await expectOneKeyPerAction(sent);
  expect(sent.sent).toHaveLength(1);
  expect(sent.sent[0]?.status).toBe(200);
});

test("a form that sends no key fails expectOneKeyPerAction, saying the server cannot tell a repeat", async ({
  page,
}) => {
  await openBrokenForm(page, "no key");
  const sent = watchMutations(page, { procedure: "checkout.placeOrder" });
  await page.getByRole("button", { name: "Pay" }).click();
  await expect(expectOneKeyPerAction(sent)).rejects.toThrow(
    /1 mutation\(s\) went out without an Idempotency-Key[\s\S]*key \(none\)/,
  );
});

test("a form that sends nothing fails expectOneKeyPerAction, saying what it watched for", async ({ page }) => {
  await openCheckout(page);
  const sent = watchMutations(page, { procedure: "checkout.placeOrder" });
  await expect(expectOneKeyPerAction(sent)).rejects.toThrow(
    /no mutation the filter selects reached the network[\s\S]*no mutation was sent: watched for POSTs to \/api\/trpc\/checkout\.placeOrder/,
  );
});
