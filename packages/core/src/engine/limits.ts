/**
 * Abuse limits, per scope and per process: how many calls one scope (a user, a tenant) may have running at once,
 * and how many new keys it may start in a window. A call past either is refused RATE_LIMITED (429 with
 * `Retry-After`) before it reaches the store, and nothing runs. A key the scope sent within the window is not new:
 * a retry, a second press or a replay never counts twice. Off unless configured; each instance counts its own calls,
 * so behind a load balancer the effective limit is the instance count times these.
 */
import { IdempotencyError, IdempotencyErrorCode } from "../errors.js";
import type { IdempotentRequest } from "./types.js";

/** The engine's `limits`. */
export interface CallLimits {
  /** The most calls one scope may have running at once in this process. */
  inFlightPerScope?: number;
  /** The most new keys one scope may start per `windowMs` in this process. */
  newKeysPerScope?: { max: number; windowMs: number };
}

/**
 * Past this many scopes remembered, those idle for a whole window are forgotten. Memory is bounded by the scopes
 * active within one window, each with at most `max` keys.
 */
const MAX_SCOPES = 10_000;

/** One action of a scope: a key is a record's only together with its path. */
function actionOf(path: string, key: string): string {
  return JSON.stringify([path, key]);
}

/** The limits of one engine; `admit` throws RATE_LIMITED or returns the call's release. */
export function limitsOf(limits: CallLimits | undefined, now: () => number, busyRetryAfterMs: number) {
  const { inFlightPerScope, newKeysPerScope } = limits ?? {};
  if (newKeysPerScope && (newKeysPerScope.max === undefined || newKeysPerScope.windowMs === undefined)) {
    throw new TypeError("limits.newKeysPerScope needs both max and windowMs.");
  }
  for (const [name, value] of [
    ["inFlightPerScope", inFlightPerScope],
    ["newKeysPerScope.max", newKeysPerScope?.max],
    ["newKeysPerScope.windowMs", newKeysPerScope?.windowMs],
  ] as const) {
    if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
      throw new TypeError(`limits.${name} must be a whole number, 1 or more (got ${value}).`);
    }
  }
  /** Per scope, the keys running now, each with how many calls of it: duplicates of one key count once. */
  const running = new Map<string, Map<string, number>>();
  /** Per scope, the keys it started within the window, with when: oldest first (a Map keeps insertion order). */
  const recentKeys = new Map<string, Map<string, number>>();

  function refuse(what: string, retryAfterMs: number): never {
    throw new IdempotencyError(
      IdempotencyErrorCode.RATE_LIMITED,
      `Too many ${what} for this user just now, so the request was not run; retry after the time given.`,
      { retryAfterMs: Math.max(1, retryAfterMs) },
    );
  }

  function keyIsNew({ scope, path, key }: IdempotentRequest, windowMs: number, max: number): void {
    const action = actionOf(path, key);
    const at = now();
    const keys = recentKeys.get(scope) ?? new Map<string, number>();
    for (const [known, seenAt] of keys) {
      if (seenAt > at - windowMs) break;
      keys.delete(known);
    }
    if (keys.has(action)) return;
    if (keys.size >= max) {
      const oldest = keys.values().next().value ?? at;
      refuse("new requests", oldest + windowMs - at);
    }
    keys.set(action, at);
    recentKeys.delete(scope);
    recentKeys.set(scope, keys);
    if (recentKeys.size > MAX_SCOPES) forgetIdleScopes(at - windowMs);
  }

  /** Scopes are kept in the order of their last new key: the idle ones are first, and the scan stops at a live one. */
  function forgetIdleScopes(before: number): void {
    for (const [scope, keys] of recentKeys) {
      let newest = 0;
      for (const seenAt of keys.values()) newest = seenAt;
      if (newest > before) return;
      recentKeys.delete(scope);
    }
  }

  return {
    /** Admits `request` under the limits, or refuses it; the returned function ends its run. */
    admit(request: IdempotentRequest): () => void {
      const { scope } = request;
      const key = actionOf(request.path, request.key);
      const keys = running.get(scope) ?? new Map<string, number>();
      // A duplicate of a call running here waits for it and replays: it is the same action, not one more.
      if (inFlightPerScope !== undefined && !keys.has(key) && keys.size >= inFlightPerScope) {
        refuse("requests running", busyRetryAfterMs);
      }
      if (newKeysPerScope) keyIsNew(request, newKeysPerScope.windowMs, newKeysPerScope.max);
      if (inFlightPerScope === undefined) return () => {};
      keys.set(key, (keys.get(key) ?? 0) + 1);
      running.set(scope, keys);
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        const left = (keys.get(key) ?? 1) - 1;
        if (left > 0) keys.set(key, left);
        else keys.delete(key);
        if (keys.size === 0) running.delete(scope);
      };
    },
  };
}
