/**
 * Where a form's current action (its key, and which input it was for) lives between renders, remounts and page
 * reloads. sessionStorage by default: it survives a reload but not the tab, which is exactly the life of "this
 * user pressing this button". A tab the browser duplicates gets a copy: actions are stamped with their tab for that.
 */
import type { TabIdentity } from "./tabs.js";

/** The minimal storage a hook needs: `sessionStorage`, `localStorage`, or your own. */
export interface KeyStorage {
  getItem(name: string): string | null;
  setItem(name: string, value: string): void;
  removeItem(name: string): void;
}

/**
 * One user action: the key minted when it started, the fingerprint of the input it was started with, whether
 * the server refused it for good (a stored 4xx): pressing again with that input is then a new attempt, with a new
 * key, and the tab that started it, where tabs can be told apart.
 */
export interface Action {
  key: string;
  fingerprint: string;
  refused?: true;
  tab?: string;
}

export interface ActionStore {
  read(): Action | undefined;
  write(action: Action): void;
  clear(): void;
}

/** sessionStorage when the page has one (undefined during SSR, and it may throw when storage is blocked). */
export function defaultStorage(): KeyStorage | undefined {
  try {
    return globalThis.sessionStorage ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * An action store over `storage`, falling back to `memory` when there is none or it refuses to write (quota,
 * privacy mode): losing the reload-survival is better than losing the key. `memory` is the caller's (a component's
 * ref), so a store made again for the same component keeps what the last one held. With `tab` (for sessionStorage,
 * which a duplicated tab gets a copy of), actions are stamped with the tab that wrote them, and those of the live
 * tab this one was copied from are not read. `tab()` is undefined while the tab is not known: every action then
 * counts as this tab's own, the side on which nothing runs twice.
 */
export function actionStore(
  storage: KeyStorage | undefined,
  name: string,
  memory: { current: Action | undefined } = { current: undefined },
  tab?: () => TabIdentity | undefined,
): ActionStore {
  return {
    read() {
      const text = safely(() => storage?.getItem(name));
      const stored = text ? parseAction(text) : undefined;
      const copiedFrom = tab?.()?.copiedFrom;
      if (stored?.tab && stored.tab === copiedFrom) return memory.current;
      return stored ?? memory.current;
    },
    write(action) {
      const current = tab?.()?.id;
      const stamped = current ? { ...action, tab: current } : action;
      memory.current = stamped;
      safely(() => storage?.setItem(name, JSON.stringify(stamped)));
    },
    clear() {
      memory.current = undefined;
      safely(() => storage?.removeItem(name));
    },
  };
}

function parseAction(text: string): Action | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null) return undefined;
    const { key, fingerprint, refused, tab } = value as Record<string, unknown>;
    if (typeof key !== "string" || typeof fingerprint !== "string") return undefined;
    return {
      key,
      fingerprint,
      ...(refused === true && { refused }),
      ...(typeof tab === "string" && { tab }),
    };
  } catch {
    return undefined;
  }
}

function safely<T>(run: () => T): T | undefined {
  try {
    return run();
  } catch {
    return undefined;
  }
}
