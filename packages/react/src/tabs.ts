/**
 * What tabs share and what each keeps to itself. An action belongs to the tab that started it: a tab the browser
 * duplicated (its sessionStorage copied) starts with none of the original's actions. But two tabs pressing with the
 * same input at once are one action: the second waits for the first and sends with its key, so it replays.
 */

/** Held by a tab for its whole life, named after its id: a duplicate finds its copied id's lock taken. */
const TAB_LOCK = "idemkit:tab:";
const TAB_ID = "idemkit-tab";
const TAB_CHANNEL = "idemkit:tabs";
/**
 * How long a tab that finds its id's lock taken waits for it before it concludes it is a duplicate, in case the
 * holder is the page it reloads, still unloading. A live original answers on the channel at once, well before.
 */
const RELOAD_GRACE_MS = 1_000;
/** Without Web Locks, how long another tab's action counts as in flight (the link's default budget). */
const IN_FLIGHT_MS = 60_000;

let identity: Promise<string | undefined> | undefined;
let known: { id: string | undefined } | undefined;

/** This tab's id once it is known (see {@link thisTab}); undefined while it is still being found. */
export function knownTab(): { id: string | undefined } | undefined {
  return known;
}

/**
 * This tab's id, kept in sessionStorage across reloads, and a new one when the tab turns out to be a duplicate of a
 * live tab. Undefined where tabs cannot be told apart (no sessionStorage or no Web Locks: the server, old browsers).
 * Asked once per page; a reload resolves in a few ms, a duplicate as soon as its original answers.
 */
export function thisTab(): Promise<string | undefined> {
  if (!identity) {
    const locks = webLocks();
    const storage = sessionStorageOrUndefined();
    if (!locks || !storage) known = { id: undefined };
    identity = locks && storage ? findIdentity(locks, storage) : Promise.resolve(undefined);
    identity.then((id) => {
      known = { id };
    });
  }
  return identity;
}

async function findIdentity(locks: LockManager, storage: Storage): Promise<string> {
  const copied = storage.getItem(TAB_ID);
  if (copied && (await claimTab(locks, copied))) return copied;
  const id = globalThis.crypto.randomUUID();
  storage.setItem(TAB_ID, id);
  await claimTab(locks, id);
  return id;
}

/** Takes `id`'s lock for the page's life, unless a live tab holds it. */
function claimTab(locks: LockManager, id: string): Promise<boolean> {
  return new Promise<boolean>((claimed) => {
    const hold = (lock: Lock | null) => {
      if (!lock) return false;
      claimed(true);
      answerFor(id);
      return new Promise<never>(() => {});
    };
    locks.request(TAB_LOCK + id, { ifAvailable: true }, hold).then(() => {
      // Taken: by the page this one reloads, on its way out, or by the live tab this one duplicates.
      const giveUp = new AbortController();
      setTimeout(() => giveUp.abort(), RELOAD_GRACE_MS);
      askWhetherAlive(id, () => giveUp.abort());
      locks.request(TAB_LOCK + id, { signal: giveUp.signal }, hold).catch(() => claimed(false));
    });
  });
}

/** The tab holding `id` answers a duplicate's question at once, rather than letting it wait out the grace. */
function answerFor(id: string): void {
  if (typeof BroadcastChannel === "undefined") return;
  const channel = new BroadcastChannel(TAB_CHANNEL);
  channel.onmessage = (event: MessageEvent<{ alive?: string }>) => {
    if (event.data.alive === id) channel.postMessage({ here: id });
  };
}

function askWhetherAlive(id: string, onAnswer: () => void): void {
  if (typeof BroadcastChannel === "undefined") return;
  const channel = new BroadcastChannel(TAB_CHANNEL);
  channel.onmessage = (event: MessageEvent<{ here?: string }>) => {
    if (event.data.here !== id) return;
    channel.close();
    onAnswer();
  };
  channel.postMessage({ alive: id });
  setTimeout(() => channel.close(), RELOAD_GRACE_MS);
}

/** Another tab's action with the same input, as it left it: the key it sends with, and until when it is in flight. */
interface SharedAction {
  key: string;
  fingerprint: string;
  inFlightUntil: number;
}

/**
 * Sends an action (`send(key)`) so that tabs pressing with the same input at once send it once. With Web Locks, the
 * action holds a lock named after its input while it is sent; a tab that finds it taken waits for it, then sends
 * with the key the holder used, which replays its answer. Without them, a tab adopts the key of another tab's
 * action with the same input that is still in flight, and the server makes the two one. `name` is the form's
 * storage name; `signal` stops the wait.
 */
export async function sendAcrossTabs<T>(
  name: string,
  action: { key: string; fingerprint: string },
  signal: AbortSignal,
  send: (key: string) => Promise<T>,
): Promise<T> {
  const shared = localStorageOrUndefined();
  const sharedName = `${name}:across-tabs`;
  const sendShared = async (key: string) => {
    writeShared(shared, sharedName, { key, fingerprint: action.fingerprint, inFlightUntil: Date.now() + IN_FLIGHT_MS });
    try {
      return await send(key);
    } finally {
      writeShared(shared, sharedName, { key, fingerprint: action.fingerprint, inFlightUntil: 0 });
    }
  };
  const locks = webLocks();
  if (!locks) {
    const other = readShared(shared, sharedName);
    const inFlight = other?.fingerprint === action.fingerprint && other.inFlightUntil > Date.now();
    return sendShared(inFlight ? other.key : action.key);
  }
  const lockName = `${name}:${action.fingerprint}`;
  const alone = await locks.request(lockName, { ifAvailable: true }, async (lock) =>
    lock ? { sent: await sendShared(action.key) } : undefined,
  );
  if (alone) return alone.sent;
  return locks.request(lockName, { signal }, () => {
    const other = readShared(shared, sharedName);
    return sendShared(other?.fingerprint === action.fingerprint ? other.key : action.key);
  });
}

function readShared(storage: Storage | undefined, name: string): SharedAction | undefined {
  try {
    const value: unknown = JSON.parse(storage?.getItem(name) ?? "null");
    if (typeof value !== "object" || value === null) return undefined;
    const { key, fingerprint, inFlightUntil } = value as Record<string, unknown>;
    return typeof key === "string" && typeof fingerprint === "string" && typeof inFlightUntil === "number"
      ? { key, fingerprint, inFlightUntil }
      : undefined;
  } catch {
    return undefined;
  }
}

function writeShared(storage: Storage | undefined, name: string, action: SharedAction): void {
  try {
    storage?.setItem(name, JSON.stringify(action));
  } catch {
    // Storage full or blocked: tabs then do not share, and each action is still protected by its own key.
  }
}

function webLocks(): LockManager | undefined {
  return typeof navigator === "undefined" ? undefined : navigator.locks;
}

function sessionStorageOrUndefined(): Storage | undefined {
  try {
    return globalThis.sessionStorage ?? undefined;
  } catch {
    return undefined;
  }
}

function localStorageOrUndefined(): Storage | undefined {
  try {
    return globalThis.localStorage ?? undefined;
  } catch {
    return undefined;
  }
}
