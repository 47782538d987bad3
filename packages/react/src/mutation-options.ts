/**
 * What the hook takes, whichever React integration it is used from: the options it adds to a procedure's mutation
 * options (where the key is kept, how actions go), what it needs of a procedure (`MutationBinding`), and the error a
 * second input in flight is refused with.
 */
import type { KeyStorage, OutcomeLookup } from "@idemkit/core/client";
import type { MutationFunctionContext, UseMutationOptions } from "@tanstack/react-query";

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
