/**
 * What the demo does on SIGTERM (a deploy, `docker stop`, Ctrl-C in a supervisor): requests whose bodies are still
 * arriving are answered 503 at once, so their clients retry elsewhere with the same key, and the process exits when
 * Next.js has finished the rest, or after DRAIN_MS whatever is still running. A call cut short there is safe by the
 * contract: in atomic mode its transaction never commits, and the next attempt runs it once.
 */

/** How long the process may take to exit after SIGTERM, at most. */
export const DRAIN_MS = 5_000;

const SHARED = Symbol.for("idemkit.demo.shutdown");

/**
 * Aborted once SIGTERM arrives. The first call listens for it (once per process: Next.js may load this module in
 * several bundles, which share the signal through globalThis).
 */
export function shutdownSignal(): AbortSignal {
  const shared = globalThis as typeof globalThis & { [SHARED]?: AbortSignal };
  const existing = shared[SHARED];
  if (existing) return existing;
  const controller = new AbortController();
  shared[SHARED] = controller.signal;
  process.once("SIGTERM", () => {
    controller.abort();
    // Next.js exits on its own once its server has closed; this bounds how long it may wait for that.
    setTimeout(() => process.exit(143), DRAIN_MS).unref();
  });
  return controller.signal;
}
