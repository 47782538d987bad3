/**
 * What the hook returns: TanStack Query's mutation state with the action's own beside it, shown from the hook's own
 * mutation or, while it has none (or its own gave up without an answer), from this action's mutation in the cache
 * (restored after a reload, or the success the lookup found, which `settleInCache` puts there).
 */
import type { IdempotencyOutcomeAnswer } from "@idemkit/core/client";
import { isRetryableError } from "@idemkit/trpc/client";
import {
  hydrate,
  type MutateOptions,
  type MutationKey,
  type MutationState,
  type QueryClient,
  type UseMutateAsyncFunction,
  type UseMutateFunction,
  type UseMutationResult,
} from "@tanstack/react-query";
import type { Progress } from "./action-progress.js";
import { keyCarrying, ownOnMutateResult } from "./mutation-key-context.js";

/** What the form can show about the action in flight, on top of TanStack Query's mutation state. */
export interface IdempotentMutationState {
  /** The current action's key; undefined until the first action starts (or is found in storage after a reload). */
  key: string | undefined;
  /** Requests sent for the current action so far: 0 before it starts, 2 during the first retry, and so on. */
  attempt: number;
  /** When the next retry is sent, in ms since the epoch; undefined when none is waiting. For "retrying in 2 s". */
  nextRetryAt: number | undefined;
  /**
   * While a retry waits (`nextRetryAt` set): the HTTP status the failed attempt was answered with (a 503, a 429),
   * or undefined when no answer came. For "the shop had a problem, trying again" rather than "connection lost".
   */
  failedAttemptStatus: number | undefined;
  /**
   * While this press waits for another tab sending the same input: when it stops waiting and sends itself, in ms
   * since the epoch (see `tabWaitMs`); undefined when it is not waiting. For "another tab is placing this order".
   */
  waitingForTabUntil: number | undefined;
  /** True when the server answered from its store: this action had already run (an earlier click, a reload). */
  replayed: boolean;
  /**
   * Set when there is an error: true when pressing the button again (same input, same key) can still succeed,
   * false when it cannot (invalid input, a key reused with another input, a failure the server stored: a 4xx, or a
   * 5xx under the middleware's `storeServerErrors`).
   */
  retryable: boolean | undefined;
  /**
   * True while the action waits for the browser to come back online: paused by TanStack Query before its first
   * request (its own `isPaused`), or by the link before a retry. For "you are offline: it will be sent".
   */
  isOffline: boolean;
  /**
   * What the `lookup` found for the current action when the hook had no answer of its own (after a reload, after
   * the link gave up); undefined before it asked, or without a `lookup`. A `completed` one is put in TanStack
   * Query's cache as the action's settled mutation, so the hook shows it as its success (`data`, `isSuccess`);
   * `running` is asked again until `lookupMaxRunningMs`, and then shown as `unknown`.
   */
  outcome: IdempotencyOutcomeAnswer | undefined;
  /**
   * True while the hook asks the `lookup` what became of the current action: from the moment a reload finds it in
   * storage (or the link gave up) until the lookup settles it. For "checking whether your order went through", with
   * the button disabled: pressing then would only guess.
   */
  isCheckingOutcome: boolean;
}

/** TanStack Query's mutation result, with `mutate`, `mutateAsync` and `reset` working on actions. */
export type IdempotentMutationResult<TOutput, TError, TInput> =
  UseMutationResult<TOutput, TError, TInput> extends infer State
    ? State extends unknown
      ? Omit<State, "mutate" | "mutateAsync" | "reset"> &
          IdempotentMutationState & {
            /**
             * Starts an action for this input, or rejoins the current one: the same input reuses the action's key
             * (a second click, a retry after a reload replays), another input starts a new action with a new key.
             * While an action is in flight, the same input joins it and sends nothing; another input is refused
             * (`mutateAsync` rejects with {@link ActionInFlightError}, `mutate` sends nothing).
             */
            mutate: UseMutateFunction<TOutput, TError, TInput>;
            /** {@link mutate} that returns the action's promise. */
            mutateAsync: UseMutateAsyncFunction<TOutput, TError, TInput>;
            /** Forgets the current action and its state: the next `mutate` is a new action with a new key. */
            reset: () => void;
          }
      : never
    : never;

/** What the result is made of. */
export interface ResultParts<TOutput, TError, TInput> {
  mutation: UseMutationResult<TOutput, TError, TInput>;
  /** This action's mutation in the cache, when there is one. */
  restored: MutationState<unknown, unknown, unknown, unknown> | undefined;
  progress: Progress;
  /** What the lookup found for this action. */
  outcome: IdempotencyOutcomeAnswer | undefined;
  key: string | undefined;
  /** Whether the lookup is being asked about this action now. */
  checking: boolean;
  /** The hook's own `mutate`, `mutateAsync` and `reset`, which work on actions. */
  actions: {
    mutate(input: TInput, options?: MutateOptions<TOutput, TError, TInput>): void;
    mutateAsync(input: TInput, options?: MutateOptions<TOutput, TError, TInput>): Promise<TOutput>;
    reset(): void;
  };
}

/** The hook's result, from its parts. */
export function shapeResult<TOutput, TError, TInput>({
  mutation,
  restored,
  progress,
  outcome,
  key,
  checking,
  actions,
}: ResultParts<TOutput, TError, TInput>): IdempotentMutationResult<TOutput, TError, TInput> {
  const state = {
    ...mutation,
    context: ownOnMutateResult(mutation.context),
    ...actions,
    key,
    attempt: progress.attempt,
    nextRetryAt: progress.nextRetryAt,
    failedAttemptStatus: progress.failedAttemptStatus,
    waitingForTabUntil: progress.waitingForTabUntil,
    replayed: progress.replayed,
    // Once the lookup found the action refused, pressing again is a new attempt, not a retry of this one.
    retryable: mutation.error
      ? outcome?.state !== "failed" && outcome?.state !== "refused" && isRetryableError(mutation.error)
      : undefined,
    isOffline: mutation.isPaused || progress.offline,
    outcome,
    isCheckingOutcome: checking,
  };
  // This action's settled or waiting mutation in the cache (restored after a reload, or the success the lookup put
  // there) is the hook's state while the hook has no mutation of its own, or its own gave up without an answer.
  if (restored && (mutation.isIdle || (mutation.isError && restored.status === "success"))) {
    return {
      ...state,
      ...restored,
      context: ownOnMutateResult(restored.context),
      isIdle: false,
      isPending: restored.status === "pending",
      isSuccess: restored.status === "success",
      isError: restored.status === "error",
      isOffline: restored.isPaused || progress.offline,
      // Only a stored answer is found by the lookup: it is a replay.
      replayed: progress.replayed || outcome?.state === "completed",
      retryable: restored.error ? isRetryableError(restored.error) : undefined,
    } as IdempotentMutationResult<TOutput, TError, TInput>;
  }
  return state as IdempotentMutationResult<TOutput, TError, TInput>;
}

/** Where a form's found answers are settled: its cache, and its procedure's mutation key. */
export interface FormCache {
  queryClient: QueryClient;
  mutationKey: MutationKey;
}

/** What marks a mutation the lookup found (its `meta`), with the key of its action. */
const FOUND = "idemkitFound";

/**
 * Puts the answer the lookup found for the action with `key` in TanStack Query's cache as that action's settled
 * mutation, through `hydrate`, the public way a mutation's state enters a cache: the hook then shows it as it shows
 * a mutation restored after a reload, and TanStack Query (its devtools, `useMutationState`) sees it as it is. Its
 * input is not known here (the hook keeps only a fingerprint of it), so `variables` is undefined. Nothing observes
 * it, so it is kept until the form forgets it (a new action, `reset()`), not collected after `gcTime`; a form keeps
 * one at most.
 */
export function settleInCache(cache: FormCache, key: string, data: unknown): void {
  const { queryClient, mutationKey } = cache;
  forgetFoundInCache(cache);
  const state: MutationState = {
    context: keyCarrying(key),
    data,
    error: null,
    failureCount: 0,
    failureReason: null,
    isPaused: false,
    status: "success",
    variables: undefined,
    submittedAt: Date.now(),
  };
  hydrate(
    queryClient,
    { mutations: [{ mutationKey, state, meta: { [FOUND]: key } }], queries: [] },
    { defaultOptions: { mutations: { gcTime: Number.POSITIVE_INFINITY } } },
  );
}

/** Takes the form's found answers out of the cache: the action they belong to is over for the form. */
export function forgetFoundInCache({ queryClient, mutationKey }: FormCache): void {
  const mutations = queryClient.getMutationCache();
  for (const found of mutations.findAll({ mutationKey, predicate: (mutation) => FOUND in (mutation.meta ?? {}) })) {
    mutations.remove(found);
  }
}
