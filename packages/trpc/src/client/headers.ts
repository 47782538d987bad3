/**
 * The key on the wire: the retry link puts each mutation's key in its operation's context, and the terminating
 * link that sends it (tRPC's httpLink, httpBatchLink, httpBatchStreamLink, or your own) writes it as the
 * `Idempotency-Key` header through its `headers` option, which is where tRPC lets a link set a request's headers.
 */
import { IDEMPOTENCY_KEY_HEADER } from "@idemkit/core";
import type { Operation } from "@trpc/client";
import type { IdempotencyCall } from "./retry-link.js";

/**
 * A batch that carries a keyed mutation beside another call: one header cannot serve both, so it is not sent. As
 * nothing left, the retry link sends each again after its own jittered wait, which parts them; route mutations to
 * `httpLink` to spare the wait.
 */
export class KeyedBatchError extends Error {
  override readonly name = "KeyedBatchError";
}

/**
 * The `headers` option of your terminating link, so that the key `idempotencyRetryLink` chose for a mutation
 * travels with it: `httpLink({ url, headers: idempotencyHeaders })`, or with headers of your own,
 * `headers: (opts) => ({ ...idempotencyHeaders(opts), authorization })`. It takes httpLink's `{ op }` and the
 * batch links' `{ opList }`; a batch may carry a keyed mutation only alone (it throws KeyedBatchError otherwise,
 * before anything is sent).
 */
export function idempotencyHeaders(opts: { op: Operation } | { opList: readonly Operation[] }): Record<string, string> {
  const ops = "op" in opts ? [opts.op] : opts.opList;
  const keys = ops.map(keyOf).filter((key): key is string => key !== undefined);
  const [key] = keys;
  if (key === undefined) return {};
  if (ops.length > 1) {
    throw new KeyedBatchError(
      `idemkit: a batch of ${ops.length} calls (${ops.map((op) => op.path).join(", ")}) carries a keyed mutation, ` +
        "and one Idempotency-Key header cannot serve them all. Send mutations through httpLink: splitLink({ " +
        'condition: (op) => op.type === "mutation", true: httpLink({ url, headers: idempotencyHeaders }), ' +
        "false: httpBatchStreamLink({ url }) }).",
    );
  }
  return { [IDEMPOTENCY_KEY_HEADER]: key };
}

/** The key the retry link chose for `op`, when it is a mutation that has one. */
function keyOf(op: Operation): string | undefined {
  if (op.type !== "mutation") return undefined;
  const call = op.context.idempotency as IdempotencyCall | undefined;
  return typeof call?.key === "string" ? call.key : undefined;
}
