/**
 * The hook behind `useIdempotentMutation`: TanStack Query's `useMutation` for a tRPC procedure, with one `Idempotency-Key` per
 * user action. The key is minted when the action starts and reused for every retry, every extra click and, through
 * sessionStorage, after a reload, so the server runs the action once however often it is sent. A new key comes
 * only with a new action: another input, `reset()`, or pressing again after the server refused the action for good.
 *
 * Retrying is the link's job (`idempotencyLink` from `@idemkit/trpc/client`, which must be in the client's links);
 * the hook owns the key and shows the link's progress: attempt, next retry time, replayed, offline. What the lookup
 * says of an action is `outcome-reconciliation.ts`; the result's shape, `action-result.ts`.
 */
import {
  type Action,
  actionFingerprint,
  checkedNumber,
  DEFAULT_LOOKUP_MAX_RUNNING_MS,
  defaultStorageName,
  newIdempotencyKey,
  press,
  Resend,
} from "@idemkit/core/client";
import { type IdempotencyProgress, idempotencyContext, nextStepAfter } from "@idemkit/trpc/client";
import { type MutateOptions, useMutation, useQueryClient } from "@tanstack/react-query";
import { useCallback, useRef, useState } from "react";
import { DEFAULT_TAB_WAIT_MS, sendAcrossTabs } from "./across-tabs.js";
import { IDLE, nextProgress, type Progress } from "./action-progress.js";
import { type FormCache, type IdempotentMutationResult, shapeResult } from "./action-result.js";
import { useKeptActionRead, useKeptActionStore } from "./kept-action.js";
import { appCallbacks, carryingKey } from "./mutation-key-context.js";
import { ActionInFlightError, type BoundMutationOptions, type MutationBinding } from "./mutation-options.js";
import { useOutcomeReconciliation } from "./outcome-reconciliation.js";
import { useRestoredMutation } from "./restored-mutation.js";

/** The action in flight: its promise, the input it was for, and how to stop its retries. */
interface Running<TOutput> {
  action: Action;
  fingerprint: string | undefined;
  promise: Promise<TOutput>;
  abort: AbortController;
}

/**
 * The hook over any tRPC React integration, through a {@link MutationBinding}: `useIdempotentMutation` here for
 * the TanStack integration, and in `@idemkit/react/classic` for `createTRPCReact`.
 */
export function useIdempotentMutationOf<TInput, TOutput, TError>(
  binding: MutationBinding<TInput, TOutput>,
  options: BoundMutationOptions<TOutput, TError, TInput> = {},
): IdempotentMutationResult<TOutput, TError, TInput> {
  const {
    storage,
    storageKey,
    lookup,
    lookupMaxRunningMs = DEFAULT_LOOKUP_MAX_RUNNING_MS,
    tabWaitMs = DEFAULT_TAB_WAIT_MS,
    afterSuccess = "replay",
    ...mutationOptions
  } = options;
  const { path } = binding;
  checkedNumber(`useIdempotentMutation(${path})`, "lookupMaxRunningMs", lookupMaxRunningMs, { unlimited: true });
  checkedNumber(`useIdempotentMutation(${path})`, "tabWaitMs", tabWaitMs);
  const name = storageKey ?? defaultStorageName(path);
  const store = useKeptActionStore(storage, name, `useIdempotentMutation(${path})`);

  const [key, setKey] = useState<string | undefined>(undefined);
  const [progress, setProgress] = useState<Progress>(IDLE);
  const action = useRef<Action | undefined>(undefined);
  const running = useRef<Running<TOutput> | undefined>(undefined);
  /**
   * Each started run by the input its mutation was started with, for that mutation's mutationFn to find its own
   * key and signal whenever TanStack calls it (later, for a mutation paused while offline), never the next run's.
   */
  const runsByInput = useRef(new Map<unknown, Running<TOutput>>());
  /**
   * This form, as the sender of its actions to other tabs: it never adopts the key of an action it sent itself.
   * Drawn at its first press, never in render: a prerender (Next.js's cacheComponents) refuses a random value there.
   */
  const sender = useRef<string | undefined>(undefined);

  /** Where a found answer is settled: this render's cache and mutation key (set below, once they are known). */
  const cacheRef = useRef<FormCache>(undefined);
  const afterSuccessRef = useRef(afterSuccess);
  afterSuccessRef.current = afterSuccess;
  /** The action succeeded: in a form that starts a new action after a success, the next press has a new key. */
  const markSucceeded = useCallback(
    (succeeded: Action) => {
      if (afterSuccessRef.current !== "new-action" || action.current?.key !== succeeded.key) return;
      action.current = { ...succeeded, succeeded: true };
      store.write(action.current);
    },
    [store],
  );
  const { reconcile, found, checking, forget } = useOutcomeReconciliation({
    path,
    store,
    action,
    running,
    markSucceeded,
    cache: cacheRef,
    lookup,
    lookupMaxRunningMs,
  });

  useKeptActionRead({ store, action, running, setKey, reconcile });

  // The key rides in the mutation's onMutate result, so that a mutation persisted while paused offline resumes
  // after a reload with it (see idempotentMutationDefaults).
  const base = binding.mutationOptions(
    carryingKey(mutationOptions, (input) => runsByInput.current.get(input)?.action.key ?? newIdempotencyKey()),
  );
  const mutation = useMutation({
    ...base,
    mutationFn: (input: TInput, context) => {
      const own = runsByInput.current.get(input);
      // Abandoned by reset() before it was sent (or while paused offline): it sends nothing.
      if (!own || own.abort.signal.aborted) {
        return Promise.reject(new DOMException("The action was abandoned with reset().", "AbortError"));
      }
      // Progress of an action abandoned by reset() is its own: it never shows on the next action.
      const onProgress = (event: IdempotencyProgress) => {
        if (running.current === own) setProgress((state) => nextProgress(state, event));
      };
      const send = (key: string) => {
        if (key !== own.action.key) {
          // Another tab sent this input at the same moment, and this tab waited for it: its key is this action's.
          own.action = { ...own.action, key };
          if (running.current === own) {
            action.current = own.action;
            store.write(own.action);
            setKey(key);
          }
        }
        const call = { key, onProgress, signal: own.abort.signal };
        const trpc = {
          ...mutationOptions.trpc,
          context: { ...mutationOptions.trpc?.context, ...idempotencyContext(call) },
        };
        return binding.send(input, trpc, context);
      };
      const onWaiting = (until: number | undefined) => {
        if (running.current === own) setProgress((state) => ({ ...state, waitingForTabUntil: until }));
      };
      sender.current ??= newIdempotencyKey();
      const sent =
        own.fingerprint === undefined
          ? send(own.action.key)
          : sendAcrossTabs(
              { key: own.action.key, fingerprint: own.fingerprint },
              { name, sender: sender.current, signal: own.abort.signal, waitMs: tabWaitMs, onWaiting },
              send,
            );
      return sent.then(
        (value) => {
          markSucceeded(own.action);
          return value;
        },
        (error: unknown) => {
          // Decided here, by the resend rule on the server's answer, and not on what the app's own callbacks may
          // throw later.
          const next = nextStepAfter(error);
          // Refused for good by the server (a stored 4xx, or a replayed 5xx it stored): pressing again is a new
          // attempt, not its replay.
          if (!next.keepKey && action.current?.key === own.action.key) {
            action.current = { ...own.action, refused: true };
            store.write(action.current);
          }
          // The action may have run and its answer is not known (the link gave up without one it could trust, or
          // the server said it ran unrecorded): ask, never send it again by itself.
          if (next.resend !== Resend.NEVER && action.current?.key === own.action.key) {
            const asked = own.action;
            own.promise.then(undefined, () => reconcile(asked));
          }
          throw error;
        },
      );
    },
  });
  const { mutateAsync: startMutation, reset: resetMutation } = mutation;
  const queryClient = useQueryClient();
  const mutationKey = base.mutationKey;
  cacheRef.current = { queryClient, mutationKey };
  const { restored, waitingWith } = useRestoredMutation({
    queryClient,
    mutationKey,
    key,
    idle: mutation.isIdle,
    action,
    store,
    reconcile,
  });

  const mutateAsync = useCallback(
    (input: TInput, callOptions?: MutateOptions<TOutput, TError, TInput>) => {
      const inputFingerprint = actionFingerprint(input);
      const restoredAction = action.current;
      const outcome = press(
        {
          inputFingerprint,
          inFlight: running.current,
          waiting: restoredAction && waitingWith(restoredAction.key, "pending").length > 0 ? restoredAction : undefined,
          kept: () => store.read(),
        },
        newIdempotencyKey,
      );
      if (outcome.does === "join" && running.current) return running.current.promise;
      if (outcome.does !== "send") return Promise.reject(new ActionInFlightError());
      const current = outcome.action;
      store.write(current);
      action.current = current;
      setKey(current.key);
      setProgress(IDLE);
      forget();
      const thisRun = {
        action: current,
        fingerprint: inputFingerprint,
        abort: new AbortController(),
      } as Running<TOutput>;
      // In place before the mutation starts, so its mutationFn finds this run's key and signal.
      running.current = thisRun;
      runsByInput.current.set(input, thisRun);
      thisRun.promise = callOptions ? startMutation(input, appCallbacks(callOptions)) : startMutation(input);
      // Only this run's own end clears the guard: a run abandoned by reset() settles after the next one started.
      const clear = () => {
        if (running.current === thisRun) running.current = undefined;
        if (runsByInput.current.get(input) === thisRun) runsByInput.current.delete(input);
      };
      thisRun.promise.then(clear, clear);
      return thisRun.promise;
    },
    [store, startMutation, waitingWith, forget],
  );

  const mutate = useCallback(
    (input: TInput, callOptions?: MutateOptions<TOutput, TError, TInput>) => {
      // Like TanStack's mutate: errors are in the state, not thrown at the caller.
      mutateAsync(input, callOptions).catch(() => {});
    },
    [mutateAsync],
  );

  const reset = useCallback(() => {
    // The abandoned action stops retrying (or never starts, if paused); a request already on the wire may still
    // land, and replays if sent again. Its mutations still paused leave the cache, so that neither coming back
    // online nor a persisted cache restored after a reload sends them.
    for (const paused of waitingWith(action.current?.key, "paused")) queryClient.getMutationCache().remove(paused);
    running.current?.abort.abort();
    running.current = undefined;
    store.clear();
    action.current = undefined;
    forget();
    setKey(undefined);
    setProgress(IDLE);
    resetMutation();
  }, [store, resetMutation, waitingWith, queryClient, forget]);

  return shapeResult<TOutput, TError, TInput>({
    mutation,
    restored,
    progress,
    outcome: found && found.key === key ? found.outcome : undefined,
    key,
    checking: checking !== undefined && checking === key,
    actions: { mutate, mutateAsync, reset },
  });
}
