/**
 * A Server Action form posted without JavaScript, repeated the ways a user or the network repeats it: pressed again
 * while its first answer is on its way, and sent again after that answer was lost. Shared by the demo's and the new
 * Next.js app's specs; `path` is the form's page, which its posts go to.
 */
import { gate } from "@idemkit/testkit";
import { type APIResponse, expect, type Locator, type Page } from "@playwright/test";

/**
 * The first form post reaches the server, which places the order, and its answer is held back until the page sends
 * a second: the moment a user presses again while the first answer is slow to come back.
 */
export async function holdFirstAnswerUntilSecondSent(page: Page, path: string) {
  const firstAnswered = gate();
  const secondSent = gate();
  let reachedServer = 0;
  await page.route(`**${path}`, async (route) => {
    if (route.request().method() !== "POST") return route.continue();
    if (++reachedServer > 1) {
      secondSent.open();
      return route.continue();
    }
    const response = await route.fetch({ maxRedirects: 0 });
    firstAnswered.open();
    await secondSent.opened;
    await route.fulfill({ response }).catch(() => {});
  });
  return { firstAnswered: firstAnswered.opened, reachedServer: () => reachedServer };
}

/**
 * Presses `target` where the user's pointer is: a locator's click would wait for the navigation a form post started,
 * a person does not.
 */
export async function pointerOn(target: Locator): Promise<() => Promise<void>> {
  const box = await target.boundingBox();
  if (!box) throw new Error(`${target} is not on the page`);
  return () => target.page().mouse.click(box.x + box.width / 2, box.y + box.height / 2);
}

/**
 * Presses `button` once: the server runs the action and answers, and the answer never reaches the page. Then sends
 * the same form again, byte for byte, as the browser does when the user confirms its resubmission. Resolves where
 * the lost answer sent the page, and the answer to the form sent again.
 */
export async function sentAgainAfterLostAnswer(
  page: Page,
  path: string,
  button: Locator,
): Promise<{ lostLocation: string | undefined; again: APIResponse }> {
  let sent: { body: Buffer; headers: Record<string, string> } | undefined;
  let lostLocation: string | undefined;
  await page.route(`**${path}`, async (route) => {
    const request = route.request();
    if (request.method() !== "POST") return route.continue();
    sent = { body: request.postDataBuffer() ?? Buffer.alloc(0), headers: request.headers() };
    lostLocation = (await route.fetch({ maxRedirects: 0 })).headers().location;
    await route.abort("connectionreset");
  });
  await button.click();
  await expect.poll(() => lostLocation).toBeDefined();
  await page.unroute(`**${path}`);
  const form = sent as NonNullable<typeof sent>;
  const again = await page.request.post(path, {
    headers: { "content-type": String(form.headers["content-type"]), origin: String(form.headers.origin) },
    data: form.body,
    maxRedirects: 0,
  });
  return { lostLocation, again };
}
