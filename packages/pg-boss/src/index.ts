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
