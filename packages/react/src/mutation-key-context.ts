/**
 * Where an action's key rides with its mutation, so that a mutation TanStack Query persisted while it waited offline
 * resumes after a reload with the key it was started with: in the mutation's `onMutate` result, the one part of a
 * mutation that is set per call and persisted with it. The app's own `onMutate` result is kept beside the key and
 * handed to the app's callbacks as if the key were not there.
 */
import type { MutationFunctionContext } from "@tanstack/react-query";

/** What the `onMutate` result holds: the action's key, and the app's own `onMutate` result. */
export interface KeyCarryingResult {
  idemkitKey: string;
  onMutateResult: unknown;
}

function isKeyCarrying(value: unknown): value is KeyCarryingResult {
  return typeof value === "object" && value !== null && typeof (value as KeyCarryingResult).idemkitKey === "string";
}

/** An `onMutate` result carrying `key`, for a mutation the app's own `onMutate` never ran for. */
export function keyCarrying(key: string): KeyCarryingResult {
  return { idemkitKey: key, onMutateResult: undefined };
}

/** The key a mutation carries in its `onMutate` result, if it carries one. */
export function carriedKey(value: unknown): string | undefined {
  return isKeyCarrying(value) ? value.idemkitKey : undefined;
}

/**
 * The app's own `onMutate` result, out of what an idempotent mutation holds in `state.context` (the key beside it).
 * Your callbacks and the hook's `context` already get it; use this where TanStack Query hands out the mutation's
 * state as it is: `MutationCache` callbacks, `useMutationState`.
 */
export function ownOnMutateResult(value: unknown): unknown {
  return isKeyCarrying(value) ? value.onMutateResult : value;
}

/** The key each mutation's `onMutate` put in its result, by the context TanStack hands that call's callbacks. */
const keysByCall = new WeakMap<MutationFunctionContext, string>();

/**
 * The key of the mutation TanStack Query runs `mutationFn` for, with `input` and `context`: the one its `onMutate`
 * chose in this page, or, for a mutation restored after a reload (its `onMutate` ran in the page before), the key in
 * the result it was persisted with, found by its input (the very object it holds). Undefined when there is none, or
 * when several restored mutations hold that input with different keys.
 */
export function keyOfMutation(context: MutationFunctionContext, input: unknown): string | undefined {
  const chosen = keysByCall.get(context);
  if (chosen) return chosen;
  const keys = new Set(
    context.client
      .getMutationCache()
      .getAll()
      .filter((mutation) => mutation.state.status === "pending" && mutation.state.variables === input)
      .map((mutation) => carriedKey(mutation.state.context))
      .filter((key) => key !== undefined),
  );
  return keys.size === 1 ? [...keys][0] : undefined;
}

/** Any of TanStack Query's mutation callbacks, whatever its data, error and input types. */
type Callback = (...args: never[]) => unknown;
type Call = (...args: unknown[]) => unknown;

interface Callbacks {
  onMutate?: Callback;
  onSuccess?: Callback;
  onError?: Callback;
  onSettled?: Callback;
}

/**
 * `options` with `onMutate` putting the key `keyFor(input)` in the mutation's `onMutate` result, and the callbacks
 * seeing only the app's own result.
 */
export function carryingKey<T extends Callbacks>(options: T, keyFor: (input: unknown) => string): T {
  const onMutate = options.onMutate as Call | undefined;
  return {
    ...appCallbacks(options),
    onMutate: async (input: unknown, context: MutationFunctionContext): Promise<KeyCarryingResult> => {
      const idemkitKey = keyFor(input);
      keysByCall.set(context, idemkitKey);
      return { idemkitKey, onMutateResult: await onMutate?.(input, context) };
    },
  };
}

/**
 * `options` with its callbacks seeing the app's own `onMutate` result instead of the one carrying the key: it is
 * the third argument of `onSuccess` and `onError`, the fourth of `onSettled`.
 */
export function appCallbacks<T extends Callbacks>(options: T): T {
  const unwrapped = (callback: Callback | undefined, at: number) =>
    callback &&
    ((...args: unknown[]) =>
      (callback as Call)(...args.map((arg, index) => (index === at ? ownOnMutateResult(arg) : arg))));
  const { onSuccess, onError, onSettled } = options;
  return {
    ...options,
    ...(onSuccess && { onSuccess: unwrapped(onSuccess, 2) }),
    ...(onError && { onError: unwrapped(onError, 2) }),
    ...(onSettled && { onSettled: unwrapped(onSettled, 3) }),
  };
}
