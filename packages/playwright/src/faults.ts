/**
 * The ways a real user and a real network repeat a mutation, staged around the app's own locators: presses faster
 * than React can disable a button, an answer lost after the server committed, a first attempt that fails, a
 * reload while the request is in flight, a connection that drops.
 */
import type { BrowserContext, Locator, Page, Route } from "@playwright/test";
import { isMutation, type MutationFilter } from "./mutations.js";

/**
 * Presses `locator` `times` times in one task, as a double click or an impatient user does before React has
 * re-rendered: nothing but the form's own guard stands between those presses and as many requests.
 */
export async function pressRapidly(locator: Locator, times = 2): Promise<void> {
  await locator.evaluate((element, count) => {
    for (let press = 0; press < count; press++) (element as HTMLElement).click();
  }, times);
}

/**
 * From now on, the next `times` mutations (1 by default) reach the server, which runs and commits them, and their
 * answers never reach the page: the connection resets. The case a retry must replay, not run again.
 */
export async function loseResponsesAfterCommit(
  page: Page,
  options: MutationFilter & { times?: number } = {},
): Promise<void> {
  await routeMutations(page, options, options.times ?? 1, async (route) => {
    await route.fetch();
    await route.abort("connectionreset");
  });
}

/**
 * From now on, the next `times` mutations (1 by default) are answered `status` without reaching the server: a
 * proxy's 502, a 503 from a deploy. The retry must go through, once.
 */
export async function failFirstAttempts(
  page: Page,
  status: number,
  options: MutationFilter & { times?: number } = {},
): Promise<void> {
  await routeMutations(page, options, options.times ?? 1, (route) =>
    route.fulfill({ status, contentType: "text/plain", body: `Injected ${status}` }),
  );
}

/**
 * Runs `act` (the user pressing the form's button), and reloads the page once the mutation it sends has reached
 * the server, before its answer reaches the page: the answer is lost with the page, the work goes on.
 */
export async function reloadWhileInFlight(
  page: Page,
  act: () => Promise<void>,
  options: MutationFilter = {},
): Promise<void> {
  let reached!: () => void;
  const atServer = new Promise<void>((resolve) => {
    reached = resolve;
  });
  await routeMutations(page, options, 1, async (route) => {
    // Sent on to the server from outside the page, so the reload cannot cancel it.
    const answer = route.fetch().catch(() => undefined);
    reached();
    await answer;
    await route.abort("connectionreset").catch(() => {});
  });
  await act();
  await atServer;
  await page.reload();
}

/**
 * Runs `act` (the user pressing the form's button), and drops the connection while the mutation it sends is on
 * its way: the request fails as the browser goes offline, before the server sees it. Returns once the page is
 * offline; `backOnline()` brings it back, when the form's waiting state has been checked.
 */
export async function goOfflineWhileInFlight(
  page: Page,
  act: () => Promise<void>,
  filter: MutationFilter = {},
): Promise<{ backOnline: () => Promise<void> }> {
  let sent!: () => void;
  const inFlight = new Promise<void>((resolve) => {
    sent = resolve;
  });
  let dropped!: () => void;
  const offline = new Promise<void>((resolve) => {
    dropped = resolve;
  });
  await routeMutations(page, filter, 1, async (route) => {
    sent();
    await offline;
    await route.abort("internetdisconnected");
  });
  await act();
  await inFlight;
  await page.context().setOffline(true);
  dropped();
  return { backOnline: () => page.context().setOffline(false) };
}

/**
 * Takes the whole browser context offline (navigator.onLine false, every request failing) while `act` runs, then
 * brings it back: what a user in a tunnel does to a form.
 */
export async function whileOffline(context: BrowserContext, act: () => Promise<void>): Promise<void> {
  await context.setOffline(true);
  try {
    await act();
  } finally {
    await context.setOffline(false);
  }
}

/** Hands the next `times` mutations `filter` selects to `handle`; every other request goes on as it would. */
async function routeMutations(
  page: Page,
  filter: MutationFilter,
  times: number,
  handle: (route: Route) => Promise<void>,
): Promise<void> {
  let left = times;
  await page.route(
    (url) => url.pathname.startsWith(filter.endpoint ?? "/api/trpc/"),
    async (route) => {
      if (left <= 0 || !isMutation(route.request(), filter)) return route.fallback();
      left--;
      await handle(route);
    },
  );
}
