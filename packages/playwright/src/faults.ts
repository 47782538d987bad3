/**
 * The ways a real user and a real network repeat a mutation, staged around the app's own locators: presses faster
 * than React can disable a button, an answer lost after the server committed, a first attempt that fails, a
 * reload while the request is in flight, a connection that drops.
 *
 * The faults are page routes, registered when called: they run before the app's own earlier `page.route` handlers
 * (and any on the context) for the requests they take, and see nothing a Service Worker answers
 * (`test.use({ serviceWorkers: "block" })` when the app has one).
 */
import type { BrowserContext, Locator, Page, Route } from "@playwright/test";
import { DoubleSubmitError } from "./errors.js";
import { endpointOf, isMutation, type MutationFilter, markInjected, watchedBy } from "./mutations.js";

/** How long the in-flight faults wait for `act` to send the mutation before they say it never came. */
const SENT_WITHIN_MS = 15_000;

/** An armed fault: how many requests it took so far, and how to take it away before it fired. */
export interface ArmedFault {
  readonly injected: number;
  /** Stops the fault: the page's requests go through as before. */
  dispose(): Promise<void>;
}

/**
 * Presses `locator` `times` times in one task, as a double click or an impatient user does before React has
 * re-rendered: nothing but the form's own guard stands between those presses and as many requests. The element must
 * be ready (the page hydrated): wait for it as the user would before pressing.
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
export function loseResponsesAfterCommit(
  page: Page,
  options: MutationFilter & { times?: number } = {},
): Promise<ArmedFault> {
  return routeMutations(page, options, options.times ?? 1, "loseResponsesAfterCommit", async (route) => {
    try {
      await route.fetch();
    } finally {
      await route.abort("connectionreset").catch(() => {});
    }
  });
}

/**
 * From now on, the next `times` mutations (1 by default) are answered `status` without reaching the server: a
 * proxy's 502, a 503 from a deploy. The retry must go through, once.
 */
export function failFirstAttempts(
  page: Page,
  status: number,
  options: MutationFilter & { times?: number } = {},
): Promise<ArmedFault> {
  return routeMutations(page, options, options.times ?? 1, "failFirstAttempts", (route) =>
    route.fulfill({ status, contentType: "text/plain", body: `Injected ${status}` }),
  );
}

/**
 * Runs `act` (the user pressing the form's button), and reloads the page once the mutation it sends is on its way
 * to the server (sent on from outside the page, so the reload does not cancel it): its answer is lost with the page,
 * the work goes on.
 */
export async function reloadWhileInFlight(
  page: Page,
  act: () => Promise<void>,
  filter: MutationFilter = {},
): Promise<void> {
  const onItsWay = signal();
  const reloaded = signal();
  await routeMutations(page, filter, 1, "reloadWhileInFlight", async (route) => {
    const answer = route.fetch().catch(() => undefined);
    onItsWay.fire();
    await answer;
    // Only once the page it was sent from is gone: a reset the old page still saw would be retried by its client
    // before the reload took it away, and the answer would not be lost after all.
    await reloaded.fired;
    await route.abort("connectionreset").catch(() => {});
  });
  await act();
  await sentWithin(onItsWay, filter, "reloadWhileInFlight");
  try {
    await page.reload();
  } finally {
    reloaded.fire();
  }
}

/**
 * Runs `act` (the user pressing the form's button), and drops the connection while the mutation it sends is on
 * its way: by default the request fails as the browser goes offline, before the server sees it; with `afterCommit`,
 * the server runs and commits it first (the answer is lost to a connection that is gone). Returns once the page is
 * offline; `backOnline()` brings it back, when the form's waiting state has been checked.
 */
export async function goOfflineWhileInFlight(
  page: Page,
  act: () => Promise<void>,
  options: MutationFilter & { afterCommit?: boolean } = {},
): Promise<{
  /** Brings the page back online: Next.js, or the hook, then sends the action again with its key. */
  backOnline: () => Promise<void>;
}> {
  const onItsWay = signal();
  const offline = signal();
  await routeMutations(page, options, 1, "goOfflineWhileInFlight", async (route) => {
    const committed = options.afterCommit ? route.fetch().catch(() => undefined) : undefined;
    await committed;
    onItsWay.fire();
    await offline.fired;
    await route.abort("internetdisconnected").catch(() => {});
  });
  await act();
  await sentWithin(onItsWay, options, "goOfflineWhileInFlight");
  await page.context().setOffline(true);
  offline.fire();
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

/**
 * Hands the next `times` mutations `filter` selects to `handle`, marking them with the fault's `name` for the log;
 * every other request goes on as it would. The route is removed once it has taken `times`.
 */
async function routeMutations(
  page: Page,
  filter: MutationFilter,
  times: number,
  name: string,
  handle: (route: Route) => Promise<void>,
): Promise<ArmedFault> {
  // A Server Action posts to the page it is on: to the page named, or to any.
  const endpoint = endpointOf(filter);
  const { serverActions } = filter;
  const matches = (url: URL) =>
    serverActions ? serverActions === true || url.pathname === serverActions.page : url.pathname.startsWith(endpoint);
  let injected = 0;
  const handler = async (route: Route) => {
    if (injected >= times || !isMutation(route.request(), filter)) return route.fallback();
    injected++;
    markInjected(route.request(), name);
    try {
      await handle(route);
    } finally {
      if (injected === times) await page.unroute(matches, handler).catch(() => {});
    }
  };
  await page.route(matches, handler);
  return {
    get injected() {
      return injected;
    },
    dispose: () => page.unroute(matches, handler).catch(() => {}),
  };
}

function signal(): { fired: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const fired = new Promise<void>((resolve) => {
    fire = resolve;
  });
  return { fired, fire };
}

/** Waits for the fault's request, or says that `act` never sent one the filter selects. */
async function sentWithin(sent: { fired: Promise<void> }, filter: MutationFilter, name: string): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new DoubleSubmitError(
            `${name}: none of the ${watchedBy(filter)} was sent within ${SENT_WITHIN_MS / 1_000} s of the action.`,
          ),
        ),
      SENT_WITHIN_MS,
    );
  });
  try {
    await Promise.race([sent.fired, late]);
  } finally {
    clearTimeout(timer);
  }
}
