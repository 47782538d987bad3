/**
 * `@idemkit/core/client`: the browser side of an action, shared by idemkit's hooks (`@idemkit/react`, and
 * `@idemkit/next`'s Server Action hook) and its tRPC link: which key a press sends, where an action is kept across
 * reloads and tabs, asking a lookup what became of one, and the retryer. Like `@idemkit/core/internal`, it makes no
 * semver promise; the types an app writes against are given again by the package it uses them with (`KeyStorage` and
 * `OutcomeLookup` by `@idemkit/react`, `RetryPolicy` by `@idemkit/trpc/client` and `@idemkit/next/client`,
 * `IdempotencyOutcomeAnswer` by `@idemkit/trpc`).
 */

export { abortableDelay, MAX_TIMER_MS } from "../deadline.js";
export { IdempotencyErrorCode, Resend, resendOf } from "../errors.js";
export { newIdempotencyKey } from "../key.js";
export { checkedNumber } from "../numeric-options.js";
export type { IdempotencyOutcomeAnswer } from "../outcome.js";
export { type NextStep, nextStep, nextStepAfterRefusal } from "../resend.js";
export type { PressContext, PressOutcome } from "./action-policy.js";
export { continuedAction, press } from "./action-policy.js";
export type { Action, ActionStore, FormActionStore, KeyStorage } from "./action-store.js";
export {
  actionFingerprint,
  actionStore,
  defaultStorage,
  defaultStorageName,
  formActionStore,
} from "./action-store.js";
export { browserStorage } from "./browser-storage.js";
export type { OutcomeLookup } from "./outcome-polling.js";
export { DEFAULT_LOOKUP_MAX_RUNNING_MS, settledOutcome } from "./outcome-polling.js";
export type { Attempted, RetryClock, RetryEnd, RetryerOptions, RetryPolicy, RetryState } from "./retryer.js";
export {
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  nextRetryDelayMs,
  parseRetryAfterMs,
  REAL_CLOCK,
  retrying,
  retryPolicyOf,
} from "./retryer.js";
export type { TabIdentity } from "./tab-identity.js";
export { knownTab, thisTab, webLocks } from "./tab-identity.js";
