/**
 * How the tests drive the checkout and how they count what really happened: orders are read back from the
 * server (`checkout.orders`, with the page's own cookie), never only from what the page shows.
 */
import { type APIRequestContext, expect, type Page, type Request } from "@playwright/test";
import superjson from "superjson";

export interface PlacedOrder {
  orderId: number;
  totalCents: number;
  createdAt: Date;
  items: { sku: string; qty: number; priceCents: number }[];
  confirmedAt: Date | undefined;
  confirmationsSent: number;
  note: string;
  version: number;
}

export const PLACE_ORDER_PATH = "/api/trpc/checkout.placeOrder";
export const ACTION_STORAGE_KEY = "idemkit:checkout.placeOrder";

export function isPlaceOrder(request: Request): boolean {
  return request.method() === "POST" && new URL(request.url()).pathname === PLACE_ORDER_PATH;
}

/** Opens the checkout and waits until it is interactive (the products come from the API after hydration). */
export async function openCheckout(page: Page): Promise<void> {
  await page.goto("/");
  await expect(page.getByRole("button", { name: "Add one Stoneware mug" })).toBeVisible();
}

export const placeOrderButton = (page: Page) => page.getByRole("button", { name: "Place order" });
export const statusLine = (page: Page) => page.getByRole("status");
export const orderList = (page: Page) => page.getByRole("list", { name: "Your orders" }).getByRole("listitem");
/** How many of a product (by its name, "Gooseneck kettle") the cart holds, as the page shows it. */
export const quantityIn = (page: Page, product: string) =>
  page.getByRole("region", { name: "Cart" }).getByRole("listitem").filter({ hasText: product }).locator(".count");

/** The user's orders as the server has them. */
export async function ordersOf(request: APIRequestContext): Promise<PlacedOrder[]> {
  const response = await request.get("/api/trpc/checkout.orders");
  expect(response.status()).toBe(200);
  const body = (await response.json()) as { result: { data: Parameters<typeof superjson.deserialize>[0] } };
  return superjson.deserialize<PlacedOrder[]>(body.result.data);
}

/** Arms the demo's fault switches for this page's user (see apps/web/src/server/faults.ts). */
export async function armFaults(
  request: APIRequestContext,
  plan: { failBeforeCommit?: number; slowMs?: number; loseCommitAnswer?: number; failCompletions?: number },
): Promise<void> {
  const response = await request.post("/api/faults", { data: plan });
  expect(response.status()).toBe(200);
}

/** How many orders the server holds now, their key claimed (armed with `slowMs`). */
export async function ordersHeld(request: APIRequestContext): Promise<number> {
  const state = (await (await request.get("/api/faults")).json()) as { ordersHeld: number };
  return state.ordersHeld;
}

/**
 * Holds the page's outcome lookups (`idempotencyOutcome`, alone or in a batch) in the browser until `release()`:
 * the moment after a reload when the page does not yet know whether its order went through lasts as long as the
 * test needs to look at it.
 */
export async function holdOutcomeLookups(page: Page): Promise<() => void> {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route(
    (url) => url.pathname.includes("idempotencyOutcome"),
    async (route) => {
      await released;
      await route.continue();
    },
  );
  return release;
}
