import type { LinkClock } from "../src/client/index.js";

/** A clock whose sleeps end only when the test moves it past them. */
export function testClock() {
  let now = 0;
  const sleeping: Array<{ until: number; wake: () => void }> = [];
  const clock: LinkClock = {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise((resolve, reject) => {
        if (signal.aborted) {
          reject(signal.reason);
          return;
        }
        const sleeper = { until: now + ms, wake: resolve };
        sleeping.push(sleeper);
        signal.addEventListener(
          "abort",
          () => {
            // An aborted sleep is over: it no longer counts as waiting.
            const at = sleeping.indexOf(sleeper);
            if (at !== -1) sleeping.splice(at, 1);
            reject(signal.reason);
          },
          { once: true },
        );
      }),
  };
  return {
    clock,
    sleeping,
    /** Moves time on by `ms`, waking what sleeps until then. */
    advance(ms: number) {
      now += ms;
      for (const sleeper of sleeping.splice(0)) {
        if (sleeper.until <= now) sleeper.wake();
        else sleeping.push(sleeper);
      }
    },
  };
}
