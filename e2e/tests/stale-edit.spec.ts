/**
 * Optimistic concurrency in a real browser: two tabs of one user edit the same order's note. The edit begun before
 * the other tab saved is refused with 409, is not stored (sending it again is refused again, not replayed), and the
 * page says to reload; after reloading, the edit is based on the new version and goes through.
 */
import { expect, type Page, test } from "@playwright/test";
import { openCheckout, ordersOf, placeOrderButton, statusLine } from "./checkout-page.js";

const EDIT_NOTE_PATH = "/api/trpc/checkout.editNote";

/** The statuses of the page's checkout.editNote requests, and whether each was a replay. */
function recordEdits(page: Page): string[] {
  const seen: string[] = [];
  page.on("response", (response) => {
    if (new URL(response.url()).pathname !== EDIT_NOTE_PATH) return;
    seen.push(`${response.status()}${response.headers()["idempotent-replayed"] === "true" ? " replayed" : ""}`);
  });
  return seen;
}

test("an edit begun before another tab saved is refused, not stored, and goes through after a reload", async ({
  page,
  context,
}) => {
  await openCheckout(page);
  await placeOrderButton(page).click();
  await expect(statusLine(page)).toContainText("Order placed");
  const [placed] = await ordersOf(page.request);
  const orderId = Number(placed?.orderId);
  const other = await context.newPage();
  await openCheckout(other);
  const orderIn = (tab: Page) => tab.locator(`li[data-order-id="${orderId}"]`);
  const saveNote = async (tab: Page, note: string) => {
    await orderIn(tab).getByLabel("Delivery note").fill(note);
    await orderIn(tab).getByRole("button", { name: "Save note" }).click();
  };

  // Both tabs begin editing the order as it is now.
  await orderIn(page).getByRole("button", { name: "Edit note" }).click();
  await orderIn(other).getByRole("button", { name: "Edit note" }).click();
  await saveNote(page, "Leave at the door");
  await expect(orderIn(page)).toContainText("Note: Leave at the door");

  const edits = recordEdits(other);
  await saveNote(other, "Ring twice");
  await expect(orderIn(other).getByRole("alert")).toContainText("changed in another tab or window");
  // Sent again as it is, it runs again and is refused again: a 409 is neither stored nor retried by the link.
  await orderIn(other).getByRole("button", { name: "Save note" }).click();
  await expect.poll(() => edits).toEqual(["409", "409"]);
  expect((await ordersOf(page.request)).find((order) => order.orderId === orderId)).toMatchObject({
    note: "Leave at the door",
    version: 2,
  });

  await orderIn(other).getByRole("button", { name: "Reload" }).click();
  await expect(orderIn(other)).toContainText("Note: Leave at the door");
  await orderIn(other).getByRole("button", { name: "Edit note" }).click();
  await saveNote(other, "Ring twice");
  await expect(orderIn(other)).toContainText("Note: Ring twice");
  expect(edits).toEqual(["409", "409", "200"]);
  expect((await ordersOf(page.request)).find((order) => order.orderId === orderId)).toMatchObject({
    note: "Ring twice",
    version: 3,
  });
});
