/**
 * Where a form's current action (its key, and which input it was for) lives between renders, remounts and page
 * reloads. sessionStorage by default: it survives a reload but not the tab, which is exactly the life of "this
 * user pressing this button". A tab the browser duplicates gets a copy: actions are stamped with their tab for that.
 */
import { fingerprint } from "../fingerprint.js";
import { browserStorage } from "./browser-storage.js";
import type { TabIdentity } from "./tab-identity.js";

/** The minimal storage a hook needs: `sessionStorage`, `localStorage`, or your own. */
export interface KeyStorage {
  /** The value kept under `name`, or null: as `sessionStorage.getItem`. */
  getItem(name: string): string | null;
  /** Keeps `value` under `name`; it may throw (storage full, or refused), which the hooks survive. */
  setItem(name: string, value: string): void;
  /** Forgets what is kept under `name`. */
  removeItem(name: string): void;
}

/**
 * One user action: the key minted when it started, the fingerprint of the input it was started with, whether
 * the server refused it for good (a failure it stored, 4xx or 5xx): pressing again with that input is then a new
 * attempt, with a new key, and the tab that started it, where tabs can be told apart.
 */
export interface Action {
  key: string;
  fingerprint: string;
  refused?: true;
  /** It succeeded, and the form starts a new action for each press after a success (`afterSuccess: "new-action"`). */
  succeeded?: true;
  tab?: string;
}

export interface ActionStore {
  read(): Action | undefined;
  write(action: Action): void;
  clear(): void;
}

/** sessionStorage when the page has one (undefined during SSR, and it may throw when storage is blocked). */
export function defaultStorage(): KeyStorage | undefined {
  return browserStorage("sessionStorage");
}

/** The storage a form keeps its action in: the one it was given, none for `"memory"`, else {@link defaultStorage}. */
function chosenStorage(storage: KeyStorage | "memory" | undefined): KeyStorage | undefined {
  return storage === "memory" ? undefined : (storage ?? defaultStorage());
}

/** The forms mounted now, each storage's names held by the one form that keeps its action there. */
const heldNames = new WeakMap<KeyStorage, Map<string, symbol>>();
/** Names already warned about, so a page that mounts many such forms says it once per name. */
const warnedNames = new Set<string>();

/**
 * Holds `name` in `storage` for one mounted form, until the returned release is called. Two forms keeping their
 * actions under one name would each find the other's action after a reload and show its outcome as their own, so
 * a form mounted while another holds its name keeps its action in memory instead (`held` false: it still has one
 * key per action, only not across a reload), and the page is warned once, naming the fix (its own `storageKey`).
 * Never an error: a list of rows on one procedure must not take the page down. A name is not React's `useId()`:
 * that follows the form's position in the tree, which a list reordered after a reload, or a new release of the page,
 * moves, and with it the key of an action in flight.
 */
function holdStorageName(storage: KeyStorage, name: string, form: string): { held: boolean; release(): void } {
  const names = heldNames.get(storage) ?? new Map<string, symbol>();
  heldNames.set(storage, names);
  if (names.has(name)) {
    if (!warnedNames.has(name)) {
      warnedNames.add(name);
      console.warn(
        `${form}: another form on this page keeps its action under "${name}", so this one keeps ` +
          "its own in memory, and loses it on a reload. Give each form its own storageKey, named after what it acts " +
          `on (such as "${name}:<order id>").`,
      );
    }
    return { held: false, release() {} };
  }
  const holder = Symbol(name);
  names.set(name, holder);
  return {
    held: true,
    release() {
      if (names.get(name) === holder) names.delete(name);
    },
  };
}

/**
 * `storage` for a form only while `held()`: otherwise it holds nothing and takes nothing, which makes the action
 * store keep the form's action in memory.
 */
function storageWhileHeld(storage: KeyStorage, held: () => boolean): KeyStorage {
  return {
    getItem: (name) => (held() ? storage.getItem(name) : null),
    setItem(name, value) {
      if (!held()) throw new Error("another form holds this storage name");
      storage.setItem(name, value);
    },
    removeItem(name) {
      if (held()) storage.removeItem(name);
    },
  };
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
      const copiedFrom = tab?.()?.copiedFrom ?? [];
      if (stored?.tab && copiedFrom.includes(stored.tab)) return memory.current;
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
    const { key, fingerprint, refused, succeeded, tab } = value as Record<string, unknown>;
    if (typeof key !== "string" || typeof fingerprint !== "string") return undefined;
    return {
      key,
      fingerprint,
      ...(refused === true && { refused }),
      ...(succeeded === true && { succeeded }),
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

/** A mounted form's action store, and how the form holds its storage name while it is mounted. */
export interface FormActionStore extends ActionStore {
  /** Holds the store's name for the form `holder` names (in warnings) until the returned release is called. */
  hold(holder: string): () => void;
}

/**
 * A form's action store under `name` in `storage` (sessionStorage by default, none for `"memory"`), the one both
 * hooks keep their action in: while another mounted form holds the name, this one keeps its action in `memory`
 * only (see {@link holdStorageName}); in sessionStorage, which a duplicated tab gets a copy of, actions are stamped
 * with their tab (`tab`, known once the tab is).
 */
export function formActionStore(
  storage: KeyStorage | "memory" | undefined,
  name: string,
  memory: { current: Action | undefined },
  tab: () => TabIdentity | undefined,
): FormActionStore {
  const chosen = chosenStorage(storage);
  let holdsName = true;
  const copiedWithTabs = chosen !== undefined && chosen === defaultStorage();
  const own = chosen && storageWhileHeld(chosen, () => holdsName);
  return {
    ...actionStore(own, name, memory, copiedWithTabs ? tab : undefined),
    hold(holder) {
      if (!chosen) return () => {};
      const { held, release } = holdStorageName(chosen, name, holder);
      holdsName = held;
      return () => {
        release();
        holdsName = true;
      };
    },
  };
}

/** Where a form keeps its action unless told otherwise (`storageKey`): one form per procedure and page. */
export function defaultStorageName(path: string): string {
  return `idemkit:${path}`;
}

/**
 * What tells one action's input from another's: files by name, size and date, not bytes (reading them would delay
 * the click; the server compares bytes). Undefined for an input that cannot be compared (a class instance): each
 * press is then an action of its own, and the server refuses such an input with a 400 that says why.
 */
export function actionFingerprint(input: unknown): string | undefined {
  try {
    return fingerprint(input, { blobs: "metadata" });
  } catch {
    return undefined;
  }
}
