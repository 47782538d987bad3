/**
 * Two tabs pressing with the same input at once are one action: the second waits for the first, a bounded while,
 * and sends with its key, so it replays (or, past the wait, the server makes the two one). What an action is sent
 * as is shared in localStorage, per form and input; the wait is a Web Lock named after them.
 */
import { browserStorage, webLocks } from "@idemkit/core/client";

/** How long another tab's action, started and not yet settled, counts as in flight (the link's default budget). */
const IN_FLIGHT_MS = 60_000;
/**
 * How long a press waits, by default, for another tab sending the same input before it sends itself: an answer
 * normally comes within a second, and a tab still holding its lock after this is retrying, or its request hangs.
 */
export const DEFAULT_TAB_WAIT_MS = 10_000;

/**
 * An action with some input, as the last form to send it left it: its key, the form that sent it, when it started
 * and when it settled (never, if its page died first).
 */
interface SharedAction {
  key: string;
  sender: string;
  startedAt: number;
  settledAt?: number;
}

/** How one press is sent across tabs. */
export interface AcrossTabs {
  /** The form's storage name: tabs share actions per form and input. */
  name: string;
  /** The form sending: it never adopts the key of an action it sent itself (one abandoned with reset()). */
  sender: string;
  /** Stops the wait, and the send. */
  signal: AbortSignal;
  /** The longest this press waits for another tab sending the same input, in ms. */
  waitMs: number;
  /** Told when the wait starts (with the time it ends, in ms since the epoch) and when it ends (undefined). */
  onWaiting: (endsAt: number | undefined) => void;
}

/**
 * Sends an action (`send(key)`) so that tabs pressing with the same input at once send it once. With Web Locks, the
 * action holds a lock named after its input while it is sent; a tab that finds it taken waits for it, at most
 * `waitMs`, then sends with the key the holder used: after the holder's answer that replays it, and before it (the
 * holder is retrying, or its request hangs) the server makes the two one, waiting for the call or answering 409
 * with `Retry-After`, which the link retries. Without Web Locks, and with the lock granted at once, a tab adopts the
 * key of another tab's action with the same input still in flight (one that stopped waiting, or whose page died
 * sending). Never the key of an action the same form sent, nor of one settled before this one asked.
 */
export async function sendAcrossTabs<T>(
  action: { key: string; fingerprint: string },
  { name, sender, signal, waitMs, onWaiting }: AcrossTabs,
  send: (key: string) => Promise<T>,
): Promise<T> {
  const shared = browserStorage("localStorage");
  const entry = `idemkit:across-tabs:${name}:${action.fingerprint}`;
  const lock = entry;
  const asked = Date.now();
  const sendShared = async (key: string) => {
    const sent: SharedAction = { key, sender, startedAt: Date.now() };
    writeShared(shared, entry, sent);
    try {
      return await send(key);
    } finally {
      // Unless another tab has sent the action since (it stopped waiting for this one): that one is in flight.
      const current = readShared(shared, entry);
      if (!current || (current.sender === sender && current.startedAt === sent.startedAt)) {
        writeShared(shared, entry, { ...sent, settledAt: Date.now() });
      }
      forgetSettled(shared, `idemkit:across-tabs:${name}:`);
    }
  };
  const another = (accept: (other: SharedAction) => boolean) => {
    const other = readShared(shared, entry);
    return other && other.sender !== sender && accept(other) ? other.key : action.key;
  };
  const inFlight = (other: SharedAction) =>
    other.settledAt === undefined && other.startedAt > Date.now() - IN_FLIGHT_MS;
  // The tab this one waited for settled after it asked; one still sending (or that died sending) is in flight.
  const afterWaiting = () => sendShared(another((other) => (other.settledAt ?? -1) >= asked || inFlight(other)));

  const locks = webLocks();
  if (!locks) return sendShared(another(inFlight));
  let granted = false;
  try {
    const alone = await locks.request(lock, { ifAvailable: true }, async (held) => {
      granted = held !== null;
      return held ? { sent: await sendShared(another(inFlight)) } : undefined;
    });
    if (alone) return alone.sent;
    const waited = await waitForLock(locks, lock, { signal, waitMs, onWaiting }, () => {
      granted = true;
      return afterWaiting();
    });
    if (waited) return waited.sent;
  } catch (error) {
    if (granted || signal.aborted) throw error;
    // Refused before it was granted (the Locks API denied to this page): sent as it is, protected by its own key.
    return sendShared(action.key);
  }
  // The wait ran out: the holder is still sending (retrying, or its request hangs). Sent without the lock, with its
  // key, and the server makes the two one.
  return afterWaiting();
}

/**
 * Waits for `lock`, telling `onWaiting` while it does, and runs `held` once it is granted; undefined when `waitMs`
 * ran out first (and the request for the lock was withdrawn).
 */
async function waitForLock<T>(
  locks: LockManager,
  lock: string,
  { signal, waitMs, onWaiting }: Pick<AcrossTabs, "signal" | "waitMs" | "onWaiting">,
  held: () => Promise<T>,
): Promise<{ sent: T } | undefined> {
  const waitEnded = new AbortController();
  const stop = () => waitEnded.abort(signal.reason);
  signal.addEventListener("abort", stop, { once: true });
  if (signal.aborted) stop();
  const bound = setTimeout(() => waitEnded.abort(), waitMs);
  const waited = () => {
    clearTimeout(bound);
    signal.removeEventListener("abort", stop);
    onWaiting(undefined);
  };
  onWaiting(Date.now() + waitMs);
  let granted = false;
  try {
    return await locks.request(lock, { signal: waitEnded.signal }, async () => {
      granted = true;
      waited();
      return { sent: await held() };
    });
  } catch (error) {
    // A failure of the send itself is the send's, also when the bound ran out just as the lock was granted.
    if (granted || signal.aborted || !waitEnded.signal.aborted) throw error;
    return undefined;
  } finally {
    waited();
  }
}

function readShared(storage: Storage | undefined, name: string): SharedAction | undefined {
  try {
    const value: unknown = JSON.parse(storage?.getItem(name) ?? "null");
    if (typeof value !== "object" || value === null) return undefined;
    const { key, sender, startedAt, settledAt } = value as Record<string, unknown>;
    if (typeof key !== "string" || typeof sender !== "string" || typeof startedAt !== "number") return undefined;
    return typeof settledAt === "number" ? { key, sender, startedAt, settledAt } : { key, sender, startedAt };
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

/** Drops the form's entries no tab can adopt any more, so that localStorage does not keep one per input ever sent. */
function forgetSettled(storage: Storage | undefined, prefix: string): void {
  try {
    const names = Array.from({ length: storage?.length ?? 0 }, (_, index) => storage?.key(index));
    for (const name of names) {
      if (!name?.startsWith(prefix)) continue;
      const other = readShared(storage, name);
      if (!other || (other.settledAt ?? other.startedAt) < Date.now() - IN_FLIGHT_MS) storage?.removeItem(name);
    }
  } catch {
    // Blocked storage: nothing was kept either.
  }
}
