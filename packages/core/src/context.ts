/**
 * What every adapter hands a protected call (a tRPC procedure, a route handler, a Server Action): its key and
 * scope, the transaction or the lease signal of its mode, and keys for its downstream calls. One shape, built in
 * one place, so that a call reads the same whichever way it came in.
 */
import type { Execution, IdempotentRequest } from "./engine/types.js";
import { downstreamKey } from "./key.js";

/** What a protected call gets for one request. */
export interface IdempotencyContext<Tx> {
  /** The validated `Idempotency-Key` of this call. */
  key: string;
  /** The scope this call's record belongs to. */
  scope: string;
  /**
   * Atomic mode: the transaction to write with. Writes made through it commit together with the stored answer, or
   * not at all (behind a stored 4xx they are rolled back: the refusal is stored, its effects are not). Lease mode:
   * undefined (so typed, when the mode is known from the store or `mode`).
   */
  tx: Tx;
  /**
   * Lease mode: aborts when this call's lease is lost (another request took the key over, or the call held it
   * past `maxHoldMs`), so its result can no longer be stored, or when it ran past `procedureTimeoutMs` and its
   * client was answered: stop what is still to do. Atomic mode: never aborts.
   */
  readonly signal: AbortSignal;
  /**
   * A stable key for a downstream call (a payment provider, another service), derived from this call's scope,
   * path and key: every retry of this call derives the same one, so the downstream call is idempotent too. `name`
   * tells several downstream calls of one call apart.
   */
  subKey(name: string): string;
}

/** The context of `request`'s call, in the execution the engine runs it in. */
export function idempotencyContextOf<Tx>(
  request: IdempotentRequest,
  execution: Execution<unknown>,
): IdempotencyContext<Tx> {
  const { key, scope } = request;
  return {
    key,
    scope,
    tx: execution.tx as Tx,
    // Read when the call reads it: atomic mode makes its signal, which never aborts, only then.
    get signal() {
      return execution.signal;
    },
    subKey: (name) => downstreamKey(request, name),
  };
}

/** `scope`, checked: a scope function must name an owner, or no record could be told apart from another's. */
export function checkedScope(scope: unknown, adapter: string): string {
  if (typeof scope !== "string" || scope.length === 0) {
    throw new TypeError(`${adapter}: scope() must return a non-empty string.`);
  }
  return scope;
}
