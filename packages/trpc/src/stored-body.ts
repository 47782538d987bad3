/**
 * How a protected call's outcome is written to the store and read back for a replay: the result through the
 * router's data transformer (so a superjson `Date` replays as a `Date`), or a stored error's code and message.
 * Without a transformer only plain JSON can be stored; anything else is refused loudly rather than replayed as
 * something else.
 */
import { notPlainJson } from "@idemkit/core/internal";
import type { TRPC_ERROR_CODE_KEY, TRPCCombinedDataTransformer, TRPCDataTransformer } from "@trpc/server";

/** How the middleware stores results: the router's transformer, or either half of a combined one. */
export type IdempotencyTransformer = TRPCDataTransformer | TRPCCombinedDataTransformer;

/** The body of a stored response. */
export interface StoredBody {
  /** The procedure's result, serialized by the transformer. Absent when it returned undefined. */
  result?: unknown;
  error?: { code: TRPC_ERROR_CODE_KEY; message: string };
}

/** The transformer that turns results into stored JSON and back. */
export function outputTransformer(transformer: IdempotencyTransformer | undefined): TRPCDataTransformer {
  if (!transformer) return plainJson;
  return "output" in transformer ? transformer.output : transformer;
}

/** Without a transformer, only values that survive JSON unchanged can be stored: anything else is refused. */
const plainJson: TRPCDataTransformer = {
  serialize(value: unknown) {
    const found = value === undefined ? undefined : notPlainJson(value, { name: "result" });
    if (found) {
      throw new TypeError(
        `idempotency(): ${found.path} is not plain JSON (${found.what}) and would not replay as it was. Pass your ` +
          "router's transformer (e.g. superjson) as the `transformer` option.",
      );
    }
    return value;
  },
  deserialize: (value: unknown) => value,
};
