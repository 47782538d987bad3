/**
 * Mutation defaults for a procedure, so that a mutation TanStack Query persisted while it waited offline
 * (`persistQueryClient`) resumes after a reload with the key it was started with, and replays instead of running
 * twice if it had been sent. TanStack Query cannot persist functions: a restored mutation runs with the defaults
 * registered for its mutation key.
 */

import {
  actionFingerprint,
  actionStore,
  continuedAction,
  defaultStorage,
  defaultStorageName,
  type KeyStorage,
  newIdempotencyKey,
} from "@idemkit/core/client";
import { idempotencyContext } from "@idemkit/trpc/client";
import type { MutationFunctionContext } from "@tanstack/react-query";
import type { DecorateMutationProcedure, ResolverDef, TRPCMutationOptions } from "@trpc/tanstack-react-query";
import { carryingKey, keyOfMutation } from "./mutation-key-context.js";
import { procedurePath } from "./procedure-path.js";

/** The options `procedure.mutationOptions()` takes (the callbacks a restored mutation runs, `meta`, `trpc`). */
export type IdempotentMutationDefaultsOptions<TDef extends ResolverDef> = NonNullable<
  Parameters<TRPCMutationOptions<TDef>>[0]
> & {
  /**
   * Where the form keeps its action, as given to `useIdempotentMutation` (`storage`, `storageKey`): a restored
   * mutation that lost its key (persisted before it had one) is sent with the form's key for the same input.
   */
  storage?: KeyStorage;
  storageKey?: string;
};

/**
 * What to give `queryClient.setMutationDefaults(procedure.mutationKey(), …)` before the persisted cache is
 * restored: a restored mutation is sent with the key it was started with (by `useIdempotentMutation`, or by a
 * mutation started from these defaults, which mint one key per mutation), and runs `options`' callbacks. Without
 * one (persisted before it had one), with the form's key for the same input; else the link mints one.
 *
 *   queryClient.setMutationDefaults(
 *     trpc.checkout.placeOrder.mutationKey(),
 *     idempotentMutationDefaults(trpc.checkout.placeOrder, { onSettled: () => invalidateOrders() }),
 *   );
 */
export function idempotentMutationDefaults<TDef extends ResolverDef>(
  procedure: DecorateMutationProcedure<TDef>,
  options: IdempotentMutationDefaultsOptions<TDef> = {},
): ReturnType<TRPCMutationOptions<TDef>> {
  const { storage, storageKey, ...mutationOptions } = options;
  const form = actionStore(storage ?? defaultStorage(), storageKey ?? defaultStorageName(procedurePath(procedure)));
  const formKeyFor = (input: unknown) => continuedAction(form.read(), actionFingerprint(input))?.key;
  const base = procedure.mutationOptions(mutationOptions);
  return carryingKey(
    {
      ...base,
      mutationFn: (input: TDef["input"], context: MutationFunctionContext) => {
        const key = keyOfMutation(context, input) ?? formKeyFor(input);
        const withKey = key && {
          trpc: {
            ...mutationOptions.trpc,
            context: { ...mutationOptions.trpc?.context, ...idempotencyContext({ key }) },
          },
        };
        const run = procedure.mutationOptions({ ...mutationOptions, ...withKey }).mutationFn;
        if (!run) throw new Error("tRPC mutationOptions() returned no mutationFn");
        return run(input, context);
      },
    },
    () => newIdempotencyKey(),
  );
}
