/**
 * `npm run screenshot -w @idemkit/e2e`: the README's picture of the checkout. Needs the demo running
 * (`npm start`, or SCREENSHOT_URL); places an order, presses again, and saves docs/checkout.png.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "@playwright/test";
import { chromiumLaunchOptions } from "./chromium.js";

const url = process.env.SCREENSHOT_URL ?? "http://127.0.0.1:3000";
const output = join(dirname(fileURLToPath(import.meta.url)), "..", "docs", "checkout.png");

const browser = await chromium.launch(chromiumLaunchOptions);
try {
  const page = await browser.newPage({ viewport: { width: 760, height: 900 }, deviceScaleFactor: 1 });
  await page.goto(url);
  const placeOrder = page.getByRole("button", { name: "Place order" });
  await page.getByRole("button", { name: "Add one Stoneware mug" }).click();
  await placeOrder.click();
  await page.getByText(/^Order placed/).waitFor();
  await page.getByRole("button", { name: "Add one Gooseneck kettle" }).click();
  await placeOrder.click();
  await page.getByText(/^Order placed/).waitFor();
  await placeOrder.click();
  await page.getByText(/^Already placed/).waitFor();
  await page.screenshot({ path: output, fullPage: true });
  console.log(`saved ${output}`);
} finally {
  await browser.close();
}
