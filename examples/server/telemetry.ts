/**
 * An audit log of idempotency decisions without OpenTelemetry: a subscriber to idemkit's diagnostics channel, which
 * costs nothing while no one subscribes.
 */
// #region audit-log
import { subscribe } from "node:diagnostics_channel";
import type { CallMessage } from "@idemkit/core/telemetry";

subscribe("idemkit:call", (message) => {
  const { path, key, outcome, durationMs } = message as CallMessage;
  // One line per protected call: a replay is a client that sent the same action again.
  console.info(JSON.stringify({ at: new Date().toISOString(), path, key, outcome, ms: Math.round(durationMs) }));
});
// #endregion audit-log
