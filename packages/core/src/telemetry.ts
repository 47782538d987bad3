/**
 * `@idemkit/core/telemetry`: what idemkit's diagnostics channels carry, for a subscriber of its own
 * (`diagnostics_channel.subscribe("idemkit:call", ...)`): a call as it ended (`CallMessage`), each decision the
 * engine took (`EventMessage`), an error summed up without what the app put in it (`ErrorSummary`), and how a call
 * ended (`CallOutcome`, which metrics carry too).
 *
 * @module @idemkit/core/telemetry
 */
export type { CallMessage, EventMessage } from "./engine/call-outcome.js";
export { CallOutcome } from "./engine/call-outcome.js";
export type { ErrorSummary } from "./observing.js";
