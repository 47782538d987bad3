/**
 * Abuse limits, per scope and per process: how many calls one scope (a user, a tenant) may have running at once,
 * and how many new keys it may start in a window. A call past either is refused RATE_LIMITED (429 with
 * `Retry-After`) before it reaches the store, and nothing runs. A key the scope sent within the window is not new:
 * a retry, a second press or a replay never counts twice. Off unless configured.
 *
 * One count per scope in the process: every endpoint given the same limits (a tRPC middleware, each Server Action,
 * each route handler, the outcome lookups) counts into one, found on `globalThis` because Next.js evaluates a
 * module once per bundle and each route is a bundle of its own. Behind a load balancer the effective limit is the
 * instance count times these.
 */
import { IdempotencyError, IdempotencyErrorCode } from "../errors.js";
import { checkedNumber } from "../numeric-options.js";
import type { RecordId } from "../store.js";

/** The engine's `limits`. */
export interface CallLimits {
  /** The most calls one scope may have running at once in this process (lookups of an action count as calls). */
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

/** What admits a call under the limits: `admit` throws RATE_LIMITED, or returns the call's release. */
export interface Admission {
  /**
   * Admits one call (or lookup) of `id`'s action, or refuses it; the returned function ends it. A call refused as
   * one too many running is told to come back after `busyRetryAfterMs`.
   */
  admit(id: RecordId, busyRetryAfterMs: number): () => void;
}

const UNLIMITED: Admission = { admit: () => () => {} };

/** Limits shared per clock, then per their values: what counts in one count. */
type Registry = WeakMap<() => number, Map<string, Admission>>;
const REGISTRY = Symbol.for("idemkit.limits.v1");

/**
 * The admission for `limits` in this process: the same for every endpoint with the same limits on the same clock
 * (`Date.now` in an app; a test's own clock counts on its own, its times being its own).
 */
export function limitsOf(limits: CallLimits | undefined, now: () => number): Admission {
  const { inFlightPerScope, newKeysPerScope } = limits ?? {};
  if (newKeysPerScope && (newKeysPerScope.max === undefined || newKeysPerScope.windowMs === undefined)) {
    throw new TypeError("limits.newKeysPerScope needs both max and windowMs.");
  }
  for (const [name, value] of [
    ["inFlightPerScope", inFlightPerScope],
    ["newKeysPerScope.max", newKeysPerScope?.max],
    ["newKeysPerScope.windowMs", newKeysPerScope?.windowMs],
  ] as const) {
    checkedNumber("idemkit", `limits.${name}`, value, { min: 1, whole: true });
  }
  if (inFlightPerScope === undefined && newKeysPerScope === undefined) return UNLIMITED;
  const shared = globalThis as typeof globalThis & { [REGISTRY]?: Registry };
  shared[REGISTRY] ??= new WeakMap();
  const byValues = shared[REGISTRY].get(now) ?? new Map<string, Admission>();
  shared[REGISTRY].set(now, byValues);
  const values = JSON.stringify([inFlightPerScope, newKeysPerScope?.max, newKeysPerScope?.windowMs]);
  const known = byValues.get(values);
  if (known) return known;
  const admission = counted(inFlightPerScope, newKeysPerScope, now);
  byValues.set(values, admission);
  return admission;
}

/** The counts of one set of limits. */
function counted(
  inFlightPerScope: number | undefined,
  newKeysPerScope: CallLimits["newKeysPerScope"],
  now: () => number,
): Admission {
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

  function keyIsNew({ scope, path, key }: RecordId, windowMs: number, max: number): void {
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
    admit(id, busyRetryAfterMs) {
      const { scope } = id;
      const key = actionOf(id.path, id.key);
      const keys = running.get(scope) ?? new Map<string, number>();
      // A duplicate of a call running here waits for it and replays: it is the same action, not one more.
      if (inFlightPerScope !== undefined && !keys.has(key) && keys.size >= inFlightPerScope) {
        refuse("requests running", busyRetryAfterMs);
      }
      if (newKeysPerScope) keyIsNew(id, newKeysPerScope.windowMs, newKeysPerScope.max);
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
