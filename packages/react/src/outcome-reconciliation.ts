/**
 * "Did it go through?": the hook asks the app's `lookup` what became of an action it has no answer for (found in
 * storage after a reload, or after the link gave up), while that action stays the current one, nothing runs for it
 * and the form is mounted. A completed action is marked succeeded and its answer settled in the cache; a stored
 * failure retires its key.
 */
import type { IdempotencyOutcomeAnswer } from "@idemkit/core/client";
import { type Action, type ActionStore, type OutcomeLookup, settledOutcome } from "@idemkit/core/client";
import { type RefObject, useCallback, useEffect, useRef, useState } from "react";
import { type FormCache, forgetFoundInCache, settleInCache } from "./action-result.js";

/** What the reconciliation works with: the hook's current action and run, and what to do with a found answer. */
export interface ReconciliationOptions {
  /** The procedure's dotted path, which the lookup is asked about. */
  path: string;
  store: ActionStore;
  action: RefObject<Action | undefined>;
  /** The run in flight, if any: nothing is asked while one runs. */
  running: RefObject<unknown>;
  markSucceeded: (succeeded: Action) => void;
  /** Where a completed action's answer is settled for the hook to show (known once the hook has rendered). */
  cache: RefObject<FormCache | undefined>;
  lookup: OutcomeLookup | undefined;
  lookupMaxRunningMs: number;
}

/** Asks the lookup about one action; returns whether it is done asking (`settled`) and what stops it. */
export type Reconcile = (current: Action) => { abort: AbortController; settled: () => boolean } | undefined;

/** What the lookup found, for the action with `key`. */
interface Found {
  key: string;
  outcome: IdempotencyOutcomeAnswer;
}

/**
 * The hook's reconciliation: `reconcile(action)` asks about one action (and returns how to stop asking), `found` is
 * what the lookup said of the current one, `checking` the key being asked about, and `forget()` stops and clears.
 */
export function useOutcomeReconciliation({
  path,
  store,
  action,
  running,
  markSucceeded,
  cache,
  lookup,
  lookupMaxRunningMs,
}: ReconciliationOptions) {
  const [found, setFound] = useState<Found>();
  const lookupRef = useRef({ ask: lookup, maxRunningMs: lookupMaxRunningMs });
  lookupRef.current = { ask: lookup, maxRunningMs: lookupMaxRunningMs };
  const lookingUp = useRef<AbortController | undefined>(undefined);
  /** The key of the action the lookup is being asked about, until it settles. */
  const [checking, setChecking] = useState<string>();

  const mounted = useRef(false);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
      lookingUp.current?.abort();
    };
  }, []);

  /**
   * Asks the lookup what became of `current`, while it stays the current action, nothing runs for it and the form
   * is mounted. Returns whether it is done asking (`settled`), and what stops it.
   */
  const reconcile: Reconcile = useCallback(
    (current: Action) => {
      const { ask, maxRunningMs } = lookupRef.current;
      if (!ask || current.refused || !mounted.current) return undefined;
      lookingUp.current?.abort();
      const abort = new AbortController();
      lookingUp.current = abort;
      const applies = () =>
        !abort.signal.aborted && mounted.current && action.current?.key === current.key && !running.current;
      let done = false;
      setChecking(current.key);
      settledOutcome(ask, { path, key: current.key }, { signal: abort.signal, maxRunningMs }, (outcome) => {
        if (!applies()) return;
        if (outcome.state === "failed") {
          // A stored failure (a 4xx, or a 5xx under storeServerErrors): pressing again is a new attempt, as when
          // the hook saw the refusal itself.
          action.current = { ...current, refused: true };
          store.write(action.current);
        }
        if (outcome.state === "completed") {
          markSucceeded(current);
          if (cache.current) settleInCache(cache.current, current.key, outcome.data);
        }
        setFound({ key: current.key, outcome });
      }).finally(() => {
        done = true;
        // A newer round of asking (another action, a reload's) is not settled by this one.
        if (lookingUp.current === abort) setChecking(undefined);
      });
      return { abort, settled: () => done };
    },
    [path, store, markSucceeded, cache, action, running],
  );

  /** Stops asking, and forgets what was found: a new action, or one abandoned with reset(). */
  const forget = useCallback(() => {
    lookingUp.current?.abort();
    setFound(undefined);
    if (cache.current) forgetFoundInCache(cache.current);
  }, [cache]);

  return { reconcile, found, checking, forget };
}
