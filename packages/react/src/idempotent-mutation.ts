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
import { Resend } from "@idemkit/core";
import {
  type Action,
  actionFingerprint,
  checkedNumber,
  DEFAULT_LOOKUP_MAX_RUNNING_MS,
  defaultStorageName,
  type KeyStorage,
  newIdempotencyKey,
  type OutcomeLookup,
  press,
} from "@idemkit/core/client";
import { type IdempotencyProgress, idempotencyContext, nextStepAfter } from "@idemkit/trpc/client";
import {
  type MutateOptions,
  type MutationFunctionContext,
  type UseMutationOptions,
  useMutation,
  useQueryClient,
} from "@tanstack/react-query";
import { useCallback, useRef, useState } from "react";
import { DEFAULT_TAB_WAIT_MS, sendAcrossTabs } from "./across-tabs.js";
import { IDLE, nextProgress, type Progress } from "./action-progress.js";
import { type FormCache, type IdempotentMutationResult, shapeResult } from "./action-result.js";
import { useKeptActionRead, useKeptActionStore } from "./kept-action.js";
import { appCallbacks, carryingKey } from "./mutation-key-context.js";
import { useOutcomeReconciliation } from "./outcome-reconciliation.js";
import { useRestoredMutation } from "./restored-mutation.js";

/**
 * @deprecated Renamed {@link IdempotentMutationKeyOptions}: `@idemkit/next` has an `IdempotentActionOptions` of its
 * own (a Server Action's), and one name for two things misled.
 */
export type IdempotentActionOptions = IdempotentMutationKeyOptions;

/** What the hook adds to the mutation options of a tRPC procedure: where the key is kept, and how actions go. */
export interface IdempotentMutationKeyOptions {
  /**
   * Where the current action's key is kept: a storage such as `sessionStorage` (the default when the page has
   * one: a reload mid-request resumes the same action), or `"memory"` to keep it in the component only.
   */
  storage?: KeyStorage | "memory";
  /**
   * The storage entry's name. Default `idemkit:<procedure path>`, which serves one form per procedure on a page.
   * Two forms on one procedure mounted at once each need their own, named after what they act on
   * (`idemkit:checkout.editNote:${orderId}`), so that after a reload each finds its own action: a second form
   * mounted with a name another holds throws, rather than take the other's action for its own.
   */
  storageKey?: string;
  /**
   * The app's outcome lookup (`outcomeLookup` from `@idemkit/trpc`), called as
   * `(input, { signal }) => trpcClient.idempotencyOutcome.query(input, { signal })`. With it, the hook asks what became of an action whose
   * answer it does not have, instead of leaving the user to guess: after a reload finds an action in storage, and
   * after the link gave up. A completed action then shows as succeeded (replayed, with its data) without its input
   * being sent again. While it answers `running`, it is asked again after 1 s, 2 s, 4 s... up to every 30 s.
   */
  lookup?: OutcomeLookup;
  /**
   * How long the `lookup` is asked again while it answers `running`, in ms: no call can hold its key longer, so
   * past it the hook stops asking and shows the outcome as `unknown` (pressing again sends the action with its key,
   * which replays it, runs it once or waits for it), rather than "still running" for good. Set it to the
   * middleware's `maxHoldMs` plus its `leaseMs` when you changed those. Default 16 minutes (15 min + 60 s, their
   * defaults).
   */
  lookupMaxRunningMs?: number;
  /**
   * How long a press waits for another tab that is sending the same input (it holds the Web Lock named after it),
   * in ms, before sending itself, with that tab's key: once the other tab has its answer that replays it, and while
   * it is still sending (retrying, or its request hangs) the server makes the two one. Meanwhile
   * `waitingForTabUntil` says so. Default 10 s: an answer normally comes within a second.
   */
  tabWaitMs?: number;
  /**
   * What a press with the same input does once the action succeeded. `"replay"` (the default): it is the same action,
   * sent with the same key, so the server answers with the first result and a press after the answer never makes a
   * second order. `"new-action"`: it is a new action with a new key, as a form that makes one thing per press expects
   * (create-t3-app's post form). Presses before the answer, retries and a reload mid-request are the one action
   * either way.
   */
  afterSuccess?: "replay" | "new-action";
}

/**
 * What the hook needs of a tRPC procedure, whichever React integration it comes from: its path, the TanStack Query
 * options of its mutations, and a way to send one call with tRPC request options of the hook's (the action's key
 * in its context).
 */
export interface MutationBinding<TInput, TOutput> {
  /** The procedure's dotted path: `checkout.placeOrder`. */
  path: string;
  /** The integration's TanStack Query options for a mutation of the procedure (its key), around `options`. */
  mutationOptions<TOptions extends object>(options: TOptions): TOptions & { mutationKey: readonly unknown[] };
  /** Sends one call with `trpc` as its tRPC request options. */
  send(input: TInput, trpc: { context: Record<string, unknown> }, context: MutationFunctionContext): Promise<TOutput>;
}

/** The callbacks, `meta` and `trpc` options of a mutation, with the hook's own. */
export type BoundMutationOptions<TOutput, TError, TInput> = Omit<
  UseMutationOptions<TOutput, TError, TInput>,
  "mutationFn" | "mutationKey"
> & { trpc?: { context?: Record<string, unknown> } } & IdempotentMutationKeyOptions;

/**
 * Thrown by `mutateAsync` for another input while an action is in flight: a form sends one action at a time, and
 * joining the one in flight would drop the new input without a word. Wait for it (`isPending`), or `reset()` first.
 */
export class ActionInFlightError extends Error {
  override readonly name = "ActionInFlightError";
  constructor() {
    super("An action with another input is in flight: wait for it to settle, or reset() to abandon it first.");
  }
}

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
