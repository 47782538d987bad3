export type {
  IdempotentJobHandler,
  IdempotentSendOptions,
  IdempotentWorkOptions,
  Jobs,
  JobsOptions,
  JobTarget,
  SendResult,
} from "./jobs.js";
export { createJobs, jobIdFor } from "./jobs.js";
