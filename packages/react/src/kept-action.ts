/**
 * Where a form keeps its current action (its key and input) across renders and reloads, and reading it back once
 * mounted. Storage such as sessionStorage is held under one name per form: a second mounted form with the same name
 * throws rather than take the first one's action for its own.
 */
import {
  type Action,
  type ActionStore,
  formActionStore,
  type KeyStorage,
  knownTab,
  thisTab,
} from "@idemkit/core/client";
import { type RefObject, useEffect, useMemo, useRef } from "react";
import type { Reconcile } from "./outcome-reconciliation.js";

/**
 * The store of the form's current action under `name`, in `storage` (or in memory), held by `holder` (how messages
 * name the form) while it is mounted. Call it before {@link useKeptActionRead}: its hold is taken first.
 */
export function useKeptActionStore(storage: KeyStorage | "memory" | undefined, name: string, holder: string) {
  // The in-memory fallback lives in a ref: React may drop a memoized store, and the key must not go with it.
  const memory = useRef<Action | undefined>(undefined);
  const store = useMemo(() => formActionStore(storage, name, memory, knownTab), [storage, name]);
  // Before the read: a form whose name another form holds never takes that form's action for its own.
  useEffect(() => store.hold(holder), [store, holder]);
  return store;
}

export interface KeptActionRead {
  store: ActionStore;
  /** The hook's current action, which the read sets. */
  action: RefObject<Action | undefined>;
  /** The run in flight, if any: what the store holds then is that run's action, so nothing is read. */
  running: RefObject<unknown>;
  setKey(key: string | undefined): void;
  reconcile: Reconcile;
}

/**
 * Reads the kept action after mount, not during render (the server renders without storage, and the markup must
 * match), once the tab is known (a duplicated tab must not take the original's actions for its own), and asks the
 * lookup what became of it, once per action found.
 */
export function useKeptActionRead({ store, action, running, setKey, reconcile }: KeptActionRead): void {
  const reconciledOnRead = useRef<string | undefined>(undefined);
  useEffect(() => {
    let asking: ReturnType<Reconcile>;
    let stopped = false;
    const read = () => {
      if (stopped || running.current) return;
      action.current = store.read();
      setKey(action.current?.key);
      // Once per action found: a store made anew on every render must not ask on every render. A lookup this
      // effect started and its cleanup stopped (StrictMode runs effects twice) is asked again by the next run.
      const found = action.current;
      if (!found || reconciledOnRead.current === found.key) return;
      reconciledOnRead.current = found.key;
      asking = reconcile(found);
    };
    if (knownTab()) read();
    else thisTab().then(read);
    return () => {
      stopped = true;
      if (asking && !asking.settled()) {
        asking.abort.abort();
        reconciledOnRead.current = undefined;
      }
    };
    // The refs and setKey are stable: the read runs again for a new store or a new way to ask.
  }, [store, reconcile, action, running, setKey]);
}
