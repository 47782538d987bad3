export { DoubleSubmitError, expectEffectTimes, expectOneKeyPerAction } from "./assertions.js";
export {
  failFirstAttempts,
  goOfflineWhileInFlight,
  loseResponsesAfterCommit,
  pressRapidly,
  reloadWhileInFlight,
  whileOffline,
} from "./faults.js";
export type { MutationFilter, MutationLog, SentMutation } from "./mutations.js";
export { isMutation, watchMutations } from "./mutations.js";
