/**
 * A form's mutation that TanStack Query restored after a reload (persisted while it waited offline, and resumed by
 * `idempotentMutationDefaults`): found by the key it carries, shown as the hook's own until the user starts another
 * action, and its answer counted as the hook's own would be.
 */
import { type Action, type ActionStore, Resend } from "@idemkit/core/client";
import { nextStepAfter } from "@idemkit/trpc/client";
import { type QueryClient, useMutationState } from "@tanstack/react-query";
import { type RefObject, useCallback, useEffect } from "react";
import { carriedKey } from "./mutation-key-context.js";
import type { Reconcile } from "./outcome-reconciliation.js";

export interface RestoredMutationOptions {
  queryClient: QueryClient;
  mutationKey: readonly unknown[];
  /** The current action's key. */
  key: string | undefined;
  /** Whether the hook's own mutation is idle: only then does a restored one's answer stand for it. */
  idle: boolean;
  action: RefObject<Action | undefined>;
  store: ActionStore;
  reconcile: Reconcile;
}

/**
 * The restored mutation's state (`restored`), and `waitingWith(key, state)`: the mutations in the cache still waiting
 * to send the action with `key`, the hook's own or restored. A restored mutation's stored refusal retires the key,
 * and when the link gave up on it, the lookup is asked.
 */
export function useRestoredMutation({
  queryClient,
  mutationKey,
  key,
  idle,
  action,
  store,
  reconcile,
}: RestoredMutationOptions) {
  const restored = useMutationState({
    filters: { mutationKey, predicate: (other) => key !== undefined && carriedKey(other.state.context) === key },
    select: (other) => other.state,
  }).at(-1);

  const waitingWith = useCallback(
    (actionKey: string | undefined, state: "paused" | "pending") =>
      queryClient
        .getMutationCache()
        .findAll({ mutationKey, status: "pending" })
        .filter(
          (other) =>
            actionKey !== undefined &&
            carriedKey(other.state.context) === actionKey &&
            (state === "pending" || other.state.isPaused),
        ),
    [queryClient, mutationKey],
  );

  const restoredError = idle ? restored?.error : undefined;
  useEffect(() => {
    const current = action.current;
    if (!restoredError || !current || current.key !== key) return;
    const next = nextStepAfter(restoredError);
    if (!next.keepKey) {
      action.current = { ...current, refused: true };
      store.write(action.current);
    } else if (next.resend !== Resend.NEVER) {
      reconcile(current);
    }
  }, [restoredError, key, store, reconcile, action]);

  return { restored, waitingWith };
}
