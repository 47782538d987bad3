/**
 * Playwright helpers for double-submit tests of your own forms.
 *
 * @module @idemkit/playwright
 */
export { expectEffectTimes, expectOneKeyPerAction } from "./assertions.js";
export { DoubleSubmitError } from "./errors.js";
export {
  type ArmedFault,
  failFirstAttempts,
  goOfflineWhileInFlight,
  loseResponsesAfterCommit,
  pressRapidly,
  reloadWhileInFlight,
  whileOffline,
} from "./faults.js";
export type { MutationFilter, MutationLog, SentMutation } from "./mutations.js";
export { endpointOf, isMutation, watchMutations } from "./mutations.js";
