/**
 * Which tab this is. An action belongs to the tab that started it: a tab the browser duplicated (its sessionStorage
 * copied) does not take the original's actions for its own. Each tab keeps an id in sessionStorage and holds a Web
 * Lock named after it while it is shown; a tab that finds its copied id's lock held asks whether its holder is alive,
 * and takes a new id if it is. Wherever a tab cannot tell, the action counts as its own: the side on which nothing
 * runs twice.
 */
import { browserStorage } from "./browser-storage.js";

const TAB_LOCK = "idemkit:tab:";
const TAB_ID = "idemkit-tab";
const TAB_CHANNEL = "idemkit:tabs";
/**
 * How long a tab that finds its id's lock taken waits for an answer from a live tab holding it before it counts the
 * id as its own: the holder may be the page it reloads, on its way out (a live original answers within ms).
 */
const RELOAD_GRACE_MS = 1_000;

/**
 * This tab's id, and the ids of the live tabs it was copied from (its original's, and theirs): the actions stamped
 * with those came with the copy and are not this tab's.
 */
export interface TabIdentity {
  id: string | undefined;
  copiedFrom?: string[];
}

/**
 * One per document, also when a bundle is loaded twice (hot reloading): a second copy would take the first for
 * another tab.
 */
interface DocumentTabs {
  identity?: Promise<TabIdentity>;
  known?: TabIdentity;
}
const TABS = Symbol.for("idemkit.tabs");
function documentTabs(): DocumentTabs {
  const global = globalThis as { [TABS]?: DocumentTabs };
  global[TABS] ??= {};
  return global[TABS];
}

/** This tab's identity once it is known (see {@link thisTab}); undefined while it is still being found. */
export function knownTab(): TabIdentity | undefined {
  return documentTabs().known;
}

/**
 * This tab's identity: its id, kept in sessionStorage across reloads, and a new one when a live tab answers for the
 * id it found there (it is a duplicate). No id where tabs cannot be told apart: no sessionStorage or Web Locks, the
 * server, a frame inside a page (it shares the page's sessionStorage, and is not a tab). Asked once per document; a
 * reload resolves in a few ms, a duplicate as soon as its original answers, a doubtful case in a second.
 */
export function thisTab(): Promise<TabIdentity> {
  const tabs = documentTabs();
  if (!tabs.identity) {
    const locks = webLocks();
    const storage = browserStorage("sessionStorage");
    const topLevel = typeof window !== "undefined" && window.top === window;
    if (!locks || !storage || !topLevel) tabs.known = { id: undefined };
    tabs.identity = (
      tabs.known ? Promise.resolve(tabs.known) : findIdentity(locks as LockManager, storage as Storage)
    ).catch(() => ({ id: undefined }));
    tabs.identity.then((identity) => {
      tabs.known = identity;
    });
  }
  return tabs.identity;
}

async function findIdentity(locks: LockManager, storage: Storage): Promise<TabIdentity> {
  // A page prerendered for a navigation not made yet is not a tab until it is shown.
  if ((document as { prerendering?: boolean }).prerendering) {
    await new Promise((shown) => document.addEventListener("prerenderingchange", shown, { once: true }));
  }
  const saved = savedTab(storage.getItem(TAB_ID));
  if (saved) {
    // A reload is this tab by definition: it does not ask, and takes its lock once the page it replaces let go.
    if (reloaded()) {
      claimTab(locks, saved.id);
      return saved;
    }
    if ((await claimTab(locks, saved.id)) === "mine") return saved;
  }
  const identity = { id: globalThis.crypto.randomUUID(), copiedFrom: saved ? [...saved.copiedFrom, saved.id] : [] };
  storage.setItem(TAB_ID, JSON.stringify(identity));
  claimTab(locks, identity.id);
  return identity;
}

/** The tab as sessionStorage keeps it (copied with it into a duplicate), or undefined. */
function savedTab(text: string | null): { id: string; copiedFrom: string[] } | undefined {
  try {
    const value: unknown = JSON.parse(text ?? "null");
    if (typeof value !== "object" || value === null) return undefined;
    const { id, copiedFrom } = value as Record<string, unknown>;
    if (typeof id !== "string" || !Array.isArray(copiedFrom)) return undefined;
    return { id, copiedFrom: copiedFrom.filter((other): other is string => typeof other === "string") };
  } catch {
    return undefined;
  }
}

function reloaded(): boolean {
  const [navigation] = performance.getEntriesByType("navigation") as PerformanceNavigationTiming[];
  return navigation?.type === "reload";
}

/**
 * Takes `id`'s lock, and answers for it, while the page is shown. "duplicate" only when a live tab answered for it:
 * without an answer the id is this tab's, and the lock is taken once whoever holds it lets go.
 */
function claimTab(locks: LockManager, id: string): Promise<"mine" | "duplicate"> {
  return new Promise((verdict) => {
    const held = (lock: Lock | null) => {
      if (!lock) return false;
      verdict("mine");
      return holdWhileShown(locks, id);
    };
    locks.request(TAB_LOCK + id, { ifAvailable: true }, held).then(
      (got) => {
        if (got !== false) return;
        const answered = new AbortController();
        askWhetherAlive(id, () => {
          answered.abort();
          verdict("duplicate");
        });
        setTimeout(() => verdict("mine"), RELOAD_GRACE_MS);
        locks.request(TAB_LOCK + id, { signal: answered.signal }, held).catch(() => {});
      },
      // The Locks API denied (an opaque origin, site data blocked): nothing tells tabs apart.
      () => verdict("mine"),
    );
  });
}

/**
 * Holds the tab's lock and answers for its id until the page is hidden: a page holding a lock cannot enter the
 * back/forward cache, and a page on its way out must not answer for the page that reloads it. Both are taken again
 * when the page comes back from that cache.
 */
function holdWhileShown(locks: LockManager, id: string): Promise<void> {
  const channel = typeof BroadcastChannel === "undefined" ? undefined : new BroadcastChannel(TAB_CHANNEL);
  if (channel) {
    channel.onmessage = (event: MessageEvent<{ alive?: string } | null>) => {
      if (event.data?.alive === id) channel.postMessage({ here: id });
    };
  }
  return new Promise((release) => {
    addEventListener(
      "pagehide",
      () => {
        channel?.close();
        release();
        addEventListener(
          "pageshow",
          (event) => {
            if (event.persisted) locks.request(TAB_LOCK + id, () => holdWhileShown(locks, id)).catch(() => {});
          },
          { once: true },
        );
      },
      { once: true },
    );
  });
}

function askWhetherAlive(id: string, onAnswer: () => void): void {
  if (typeof BroadcastChannel === "undefined") return;
  const channel = new BroadcastChannel(TAB_CHANNEL);
  channel.onmessage = (event: MessageEvent<{ here?: string } | null>) => {
    if (event.data?.here !== id) return;
    channel.close();
    onAnswer();
  };
  channel.postMessage({ alive: id });
  setTimeout(() => channel.close(), RELOAD_GRACE_MS);
}

/** The browser's Web Locks, where it has them. */
export function webLocks(): LockManager | undefined {
  return typeof navigator === "undefined" ? undefined : navigator.locks;
}
