/**
 * How the tests use the new Next.js app: a user (the `uid` cookie its session reads), its checkout form once it is
 * hydrated, and the orders counted in the database.
 */
import { type BrowserContext, expect, type Page } from "@playwright/test";
import { appDatabase } from "../app-database.js";

const { sql: database, close } = appDatabase("E2E_NEXT_APP_DATABASE_URL");

/** Closes the tests' connection; for `test.afterAll`. */
export const closeDatabase = close;

/** Signs a new user in on `context` and returns their id. */
export async function signIn(context: BrowserContext, baseURL: string): Promise<string> {
  const userId = globalThis.crypto.randomUUID();
  await context.addCookies([{ name: "uid", value: userId, url: baseURL }]);
  return userId;
}

/** How many orders the user placed, as the database has them: what each action must add once. */
export async function ordersOf(userId: string): Promise<number> {
  const [row] = await database()<
    { count: number }[]
  >`select count(*)::int as count from orders where user_id = ${userId}`;
  return row?.count ?? 0;
}

export const placeOrderButton = (page: Page) => page.getByRole("button", { name: "Place order" });
export const receipt = (page: Page) => page.getByRole("status");

/** Opens the checkout; with JavaScript, waits until React runs its form (a press before is a plain form post). */
export async function openCheckout(page: Page, { hydrated }: { hydrated: boolean }): Promise<void> {
  await page.goto("/checkout");
  const quantity = page.getByLabel("Quantity");
  await expect(quantity).toBeVisible();
  if (!hydrated) return;
  await expect
    .poll(() => quantity.evaluate((input) => Object.keys(input).some((key) => key.startsWith("__reactProps"))))
    .toBe(true);
}
