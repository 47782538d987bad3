/**
 * The operator page (/operator) in Chromium: the hit rate, the calls in flight and the outbox's lag as charts, and
 * the calls by outcome, fed by idemkit's OpenTelemetry metrics in the demo's server. Other tests run against the same
 * server at once, so what is checked is this test's own calls showing up, not totals.
 */
import { expect, test } from "@playwright/test";

test("charts the hit rate, the calls in flight and the outbox's lag, and counts this test's replay", async ({
  page,
}, testInfo) => {
  await page.goto("/");
  const before = (await (await page.request.get("/api/operator")).json()) as { calls: Record<string, number> };
  const key = globalThis.crypto.randomUUID();
  const place = () =>
    page.request.post("/api/trpc/checkout.placeOrder", {
      headers: { "idempotency-key": key, "content-type": "application/json" },
      data: { json: { items: [{ sku: "tea", qty: 1 }] } },
    });
  expect((await place()).status()).toBe(200);
  expect((await place()).headers()["idempotent-replayed"]).toBe("true");

  await page.goto("/operator");
  await expect(page.getByRole("img", { name: /^Hit rate: \d+%$/ })).toBeVisible();
  await expect(page.getByRole("img", { name: /^Calls in flight: \d+$/ })).toBeVisible();
  const replayed = page.getByRole("table", { name: "Calls by outcome" }).getByRole("row", { name: /^replayed/ });
  await expect
    .poll(async () => Number(await replayed.getByRole("cell").textContent()))
    .toBeGreaterThanOrEqual((before.calls.replayed ?? 0) + 1);
  // On PGlite the relay runs in the server, so its lag is there; on PostgreSQL it runs in the worker's process.
  const lag = page.getByRole("img", { name: /^Outbox lag: / });
  if (testInfo.project.name === "pglite") await expect(lag).toHaveAccessibleName(/s mean, .* s longest$/);
  else await expect(lag).toBeVisible();
  // The lines are drawn from the samples the page took.
  await expect(page.getByRole("img", { name: /^Hit rate/ }).locator("polyline")).toHaveCount(1);
});
