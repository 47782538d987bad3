/**
 * Mutation defaults for a procedure, so that a mutation TanStack Query persisted while it waited offline
 * (`persistQueryClient`) resumes after a reload with the key it was started with, and replays instead of running
 * twice if it had been sent. TanStack Query cannot persist functions: a restored mutation runs with the defaults
 * registered for its mutation key.
 */
import { newIdempotencyKey } from "@idemkit/core/internal";
import { idempotencyContext } from "@idemkit/trpc/client";
import type { MutationFunctionContext } from "@tanstack/react-query";
import type { DecorateMutationProcedure, ResolverDef, TRPCMutationOptions } from "@trpc/tanstack-react-query";
import { carryingKey, keyOfRunningMutation } from "./mutation-key-context.js";

/** The options `procedure.mutationOptions()` takes: the callbacks a restored mutation runs, `meta`, `trpc`. */
export type IdempotentMutationDefaultsOptions<TDef extends ResolverDef> = NonNullable<
  Parameters<TRPCMutationOptions<TDef>>[0]
>;

/**
 * What to give `queryClient.setMutationDefaults(procedure.mutationKey(), …)` before the persisted cache is
 * restored: a restored mutation is sent with the key it was started with (by `useIdempotentMutation`, or by a
 * mutation started from these defaults, which mint one key per mutation), and runs `options`' callbacks:
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
  const base = procedure.mutationOptions(options);
  return carryingKey(
    {
      ...base,
      mutationFn: (input: TDef["input"], context: MutationFunctionContext) => {
        const key = keyOfRunningMutation(context.client, input);
        const withKey = key && {
          trpc: { ...options.trpc, context: { ...options.trpc?.context, ...idempotencyContext({ key }) } },
        };
        const run = procedure.mutationOptions({ ...options, ...withKey }).mutationFn;
        if (!run) throw new Error("tRPC mutationOptions() returned no mutationFn");
        return run(input, context);
      },
    },
    () => newIdempotencyKey(),
  );
}
