export type {
  IdempotentJobHandler,
  IdempotentSendOptions,
  IdempotentWorkOptions,
  Jobs,
  JobsOptions,
  JobTarget,
} from "./jobs.js";
export { createJobs, jobIdFor } from "./jobs.js";
