/** `node worker.js`: the outbox's relay as a process of its own beside the app. */
// #region worker
import { relay } from "./confirmations";

relay.start(); // in as many processes as you like: they share the work
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    await relay.stop(); // finishes the batch in flight
    process.exit(0);
  });
}
// #endregion worker
