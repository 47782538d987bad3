/**
 * `@idemkit/core/adapter`: what an adapter is built from besides the engine itself (`createIdempotencyEngine`, at
 * `@idemkit/core`): the request it hands the engine, what its work gets and settles with, what a run answers, and
 * the options every adapter takes, with each mode's own. The tRPC middleware, the Server Action wrapper and the
 * Fetch adapter are written on it, as a third party's adapter would be.
 *
 * @module @idemkit/core/adapter
 */
export type {
  AdapterOptions,
  AtomicModeOptions,
  Execution,
  IdempotentRequest,
  LeaseModeOptions,
  ModeOptions,
  RunResult,
  Settlement,
} from "./engine/types.js";
