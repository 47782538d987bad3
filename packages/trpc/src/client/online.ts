/** What the link knows of the browser's connection: whether it is offline, and waiting for it to come back. */
import { type LinkClock, MAX_TIMER_MS } from "./clock.js";

/** True in a browser that reports itself offline; never outside a browser, which has no such report. */
export function isOffline(): boolean {
  return globalThis.navigator?.onLine === false && typeof globalThis.addEventListener === "function";
}

/**
 * Resolves true when the browser reports it is back online, false when `withinMs` passed first; rejects if the
 * operation is aborted meanwhile.
 */
export async function whenOnline(withinMs: number, clock: LinkClock, signal: AbortSignal): Promise<boolean> {
  signal.throwIfAborted();
  const done = new AbortController();
  const stop = () => done.abort(signal.reason);
  signal.addEventListener("abort", stop, { once: true });
  const online = new Promise<boolean>((resolve) => {
    const onOnline = () => resolve(true);
    globalThis.addEventListener("online", onOnline, { once: true });
    done.signal.addEventListener("abort", () => globalThis.removeEventListener("online", onOnline), { once: true });
  });
  // A budget past what a timer can hold (Infinity, or over 2^31 - 1 ms, which timers cut short) waits for the
  // connection alone, as aborting still ends it.
  const timed = withinMs <= MAX_TIMER_MS;
  const aborted = new Promise<never>((_, reject) => {
    done.signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
  try {
    return await Promise.race([online, timed ? clock.sleep(withinMs, done.signal).then(() => false) : aborted]);
  } finally {
    signal.removeEventListener("abort", stop);
    aborted.catch(() => {});
    done.abort();
    signal.throwIfAborted();
  }
}
