/**
 * pg-boss jobs sent in the protected call's transaction and handled once each.
 *
 * @module @idemkit/pg-boss
 */
export type {
  IdempotentJobHandler,
  IdempotentSendOptions,
  IdempotentWorkOptions,
  JobOf,
  JobQueue,
  Jobs,
  JobsOptions,
  JobTarget,
  SendOptionsOf,
  SendResult,
  WorkOptionsOf,
} from "./jobs.js";
export { createJobs, jobIdFor } from "./jobs.js";
