/**
 * `useIdempotentMutation` for tRPC's TanStack React Query integration (`@trpc/tanstack-react-query`, `useTRPC()`):
 * `useIdempotentMutation(trpc.checkout.placeOrder)` where the app would write
 * `useMutation(trpc.checkout.placeOrder.mutationOptions())`. For `createTRPCReact` (create-t3-app), see
 * `@idemkit/react/classic`.
 */
import type { TRPCClientErrorLike } from "@trpc/client";
import type { DecorateMutationProcedure, ResolverDef, TRPCMutationOptions } from "@trpc/tanstack-react-query";
import type { IdempotentMutationResult } from "./action-result.js";
import { useIdempotentMutationOf } from "./idempotent-mutation.js";
import type { BoundMutationOptions, IdempotentMutationKeyOptions, MutationBinding } from "./mutation-options.js";
import { procedurePath } from "./procedure-path.js";

/** The options `procedure.mutationOptions()` takes (callbacks, `meta`, `trpc`), plus {@link IdempotentMutationKeyOptions}. */
export type UseIdempotentMutationOptions<TDef extends ResolverDef> = NonNullable<
  Parameters<TRPCMutationOptions<TDef>>[0]
> &
  IdempotentMutationKeyOptions;

/** The hook's result for a procedure of the TanStack integration (`useTRPC()`). */
export type UseIdempotentMutationResult<TDef extends ResolverDef> = IdempotentMutationResult<
  TDef["output"],
  TRPCClientErrorLike<TDef>,
  TDef["input"]
>;

/**
 * A mutation of a tRPC procedure that is safe to press twice, retry and resume after a reload:
 *
 *   const trpc = useTRPC();
 *   const order = useIdempotentMutation(trpc.checkout.placeOrder);
 *   <button onClick={() => order.mutate({ items })} disabled={order.isPending}>Place order</button>
 */
export function useIdempotentMutation<TDef extends ResolverDef>(
  procedure: DecorateMutationProcedure<TDef>,
  options: UseIdempotentMutationOptions<TDef> = {},
): UseIdempotentMutationResult<TDef> {
  const binding: MutationBinding<TDef["input"], TDef["output"]> = {
    path: procedurePath(procedure),
    // The binding is generic over integrations; tRPC's own option types are checked where the app passes them.
    mutationOptions: (mutationOptions) => procedure.mutationOptions(mutationOptions as never) as never,
    send(input, trpc, context) {
      const run = procedure.mutationOptions({ trpc }).mutationFn;
      if (!run) throw new Error("tRPC mutationOptions() returned no mutationFn");
      return run(input, context);
    },
  };
  return useIdempotentMutationOf(
    binding,
    options as BoundMutationOptions<TDef["output"], TRPCClientErrorLike<TDef>, TDef["input"]>,
  );
}
