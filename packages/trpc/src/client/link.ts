/**
 * The short form of the client link: `idempotencyRetryLink` over an `httpLink` of its own for mutations, so that
 * one link before the app's batching link is all a client needs. Mutations leave one per HTTP request, so a keyed
 * mutation never ends up in a batch, where one header would have to serve several (the server refuses that with 400).
 */
import {
  type HTTPHeaders,
  type HTTPLinkOptions,
  httpLink,
  type Operation,
  type TRPCFetch,
  type TRPCLink,
} from "@trpc/client";
import type { AnyTRPCRouter } from "@trpc/server";
import { idempotencyHeaders } from "./headers.js";
import { type IdempotencyRetryLinkOptions, idempotencyRetryLink } from "./retry-link.js";

/** Options of {@link idempotencyLink}: those of tRPC's `httpLink` (url, transformer, headers, fetch), plus `retry`. */
export type IdempotencyLinkOptions<TRouter extends AnyTRPCRouter> = HTTPLinkOptions<
  TRouter["_def"]["_config"]["$types"]
> &
  IdempotencyRetryLinkOptions;

/**
 * A tRPC link that makes mutations safe to retry and sends them itself: keyed and retried as by
 * {@link idempotencyRetryLink}, each through tRPC's `httpLink` with these options, the key in its header.
 * Queries and subscriptions go on to the next link. Put it before your terminating link:
 *
 *   links: [idempotencyLink({ url, transformer }), httpBatchLink({ url, transformer })]
 *
 * Every mutation it sends must be protected by the `idempotency` middleware: a retried unprotected mutation can
 * run twice. Where only some are, send just those to it with tRPC's `splitLink`. To send mutations over a
 * terminating link of your own, use `idempotencyRetryLink` and `idempotencyHeaders` instead.
 */
export function idempotencyLink<TRouter extends AnyTRPCRouter>(
  options: IdempotencyLinkOptions<TRouter>,
): TRPCLink<TRouter> {
  // The router type only constrains what callers may pass (a transformer when the router has one).
  const { retry, clock, fetch, headers, ...http } = options as IdempotencyLinkOptions<AnyTRPCRouter>;
  const retrying = idempotencyRetryLink<TRouter>({ retry, clock });
  const mutations = httpLink({
    ...http,
    fetch: keepingEveryAnswer(fetch),
    headers: async ({ op }: { op: Operation }): Promise<HTTPHeaders> => ({
      ...(typeof headers === "function" ? await headers({ op }) : headers),
      ...idempotencyHeaders({ op }),
    }),
    // Typed per router by the caller (a transformer when the router has one); httpLink itself takes any.
  } as Parameters<typeof httpLink>[0]);
  return (runtime) => {
    const retry = retrying(runtime);
    const send = mutations(runtime);
    return ({ op, next }) => {
      if (op.type !== "mutation") return next(op);
      return retry({ op, next: (attempt) => send({ op: attempt, next: () => notTerminating(attempt) }) });
    };
  };
}

/**
 * `fetch` whose answers keep their response when their body is not tRPC's JSON (a proxy's 502 page, a 413 from a
 * load balancer): tRPC's httpLink then fails without it, and the link reads the status and `Retry-After` from the
 * error's cause instead (see `responseOf`).
 */
function keepingEveryAnswer(userFetch: TRPCFetch | undefined): TRPCFetch {
  return async (input, init) => {
    const answer = await (userFetch ?? globalThis.fetch)(input, init as RequestInit);
    const json = answer.json.bind(answer);
    return Object.assign(answer, {
      json: () =>
        json().catch((cause: unknown) => {
          const { status } = answer as { status?: number };
          throw Object.assign(new Error(`${status}: the answer is not tRPC's JSON`, { cause }), {
            response: answer,
          });
        }),
    });
  };
}

function notTerminating(op: Operation): never {
  throw new Error(`httpLink called next() for ${op.path}: it is a terminating link`);
}
