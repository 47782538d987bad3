/**
 * `useIdempotentMutation` for tRPC's classic React integration, `createTRPCReact` from `@trpc/react-query`, as
 * create-t3-app generates it: `useIdempotentMutation(api.post.create)` where the app would write
 * `api.post.create.useMutation()`. The same hook as `@idemkit/react`'s, sending through the tRPC client that
 * `api.Provider` holds, so the app's links (`idempotencyLink` among them) carry each action's key.
 *
 * @module @idemkit/react/classic
 */
import { getMutationKey } from "@trpc/react-query";
import { TRPCContext } from "@trpc/react-query/shared";
import { useContext } from "react";
import type { IdempotentMutationResult } from "./action-result.js";
import { useIdempotentMutationOf } from "./idempotent-mutation.js";
import type { BoundMutationOptions, IdempotentMutationKeyOptions, MutationBinding } from "./mutation-options.js";

/** A mutation procedure of `createTRPCReact`'s proxy: `api.post.create`. Its types are read from its `useMutation`. */
export interface ClassicMutationProcedure {
  /** The procedure's own hook, read for its input, output and error types only: the hook never calls it. */
  useMutation: (...args: never[]) => {
    /** Sends the mutation: its parameters give the input's type, its answer the output's. */
    mutateAsync: (...args: never[]) => Promise<unknown>;
    error: unknown;
  };
}

type MutationOf<P extends ClassicMutationProcedure> = ReturnType<P["useMutation"]>;
type InputOf<P extends ClassicMutationProcedure> = Parameters<MutationOf<P>["mutateAsync"]>[0];
type OutputOf<P extends ClassicMutationProcedure> = Awaited<ReturnType<MutationOf<P>["mutateAsync"]>>;
type ErrorOf<P extends ClassicMutationProcedure> = NonNullable<MutationOf<P>["error"]>;

/** The options `api.<procedure>.useMutation()` takes (callbacks, `meta`, `trpc`), plus the hook's own. */
export type UseIdempotentClassicMutationOptions<TProcedure extends ClassicMutationProcedure> = NonNullable<
  Parameters<TProcedure["useMutation"]>[0]
> &
  IdempotentMutationKeyOptions;

/** The hook's result for a procedure of `createTRPCReact`. */
export type UseIdempotentClassicMutationResult<TProcedure extends ClassicMutationProcedure> = IdempotentMutationResult<
  OutputOf<TProcedure>,
  ErrorOf<TProcedure>,
  InputOf<TProcedure>
>;

/**
 * A mutation of a tRPC procedure that is safe to press twice, retry and resume after a reload, inside `api.Provider`:
 *
 *   const createPost = useIdempotentMutation(api.post.create, { afterSuccess: "new-action" });
 *   <form onSubmit={(e) => { e.preventDefault(); createPost.mutate({ name }); }}>
 */
export function useIdempotentMutation<TProcedure extends ClassicMutationProcedure>(
  procedure: TProcedure,
  options: UseIdempotentClassicMutationOptions<TProcedure> = {} as UseIdempotentClassicMutationOptions<TProcedure>,
): UseIdempotentClassicMutationResult<TProcedure> {
  const trpc = useContext(TRPCContext);
  if (!trpc) {
    throw new Error("useIdempotentMutation (@idemkit/react/classic) must be used inside your tRPC api.Provider.");
  }
  const mutationKey = getMutationKey(procedure as unknown as Parameters<typeof getMutationKey>[0]);
  const path = mutationKey.flat().join(".");
  const binding: MutationBinding<InputOf<TProcedure>, OutputOf<TProcedure>> = {
    path,
    mutationOptions: (mutationOptions) => ({ ...mutationOptions, mutationKey }),
    send: (input, request) => trpc.client.mutation(path, input, request) as Promise<OutputOf<TProcedure>>,
  };
  return useIdempotentMutationOf(
    binding,
    options as BoundMutationOptions<OutputOf<TProcedure>, ErrorOf<TProcedure>, InputOf<TProcedure>>,
  );
}

export type { IdempotentMutationState } from "./action-result.js";
export { ActionInFlightError } from "./mutation-options.js";
