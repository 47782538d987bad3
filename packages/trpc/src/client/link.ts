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
  type OperationResultEnvelope,
  TRPCClientError,
  type TRPCFetch,
  type TRPCLink,
} from "@trpc/client";
import type { AnyTRPCRouter } from "@trpc/server";
import { type Observable, observable } from "@trpc/server/observable";
import { idempotencyHeaders } from "./headers.js";
import { type IdempotencyRetryLinkOptions, idempotencyRetryLink } from "./retry-link.js";

type Envelope = OperationResultEnvelope<unknown, TRPCClientError<AnyTRPCRouter>>;

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
  const { retry, clock, attemptTimeoutMs, fetch, headers, ...http } = options as IdempotencyLinkOptions<AnyTRPCRouter>;
  const retrying = idempotencyRetryLink<TRouter>({ retry, clock, attemptTimeoutMs });
  const mutations = httpLink({
    ...http,
    fetch: keepingEveryAnswer(fetch),
    headers: async ({ op }: { op: Operation }): Promise<HTTPHeaders> => ({
      ...asRecord(typeof headers === "function" ? await headers({ op }) : headers),
      ...idempotencyHeaders({ op }),
    }),
    // Typed per router by the caller (a transformer when the router has one); httpLink itself takes any.
  } as Parameters<typeof httpLink>[0]);
  return (runtime) => {
    const retry = retrying(runtime);
    const send = mutations(runtime);
    return ({ op, next }) => {
      if (op.type !== "mutation") return next(op);
      return retry({
        op,
        next: (attempt) => withResponseInMeta(send({ op: attempt, next: () => notTerminating(attempt) })),
      });
    };
  };
}

/**
 * `fetch` whose failed answers (3xx and up) keep their response when their body is not tRPC's JSON (a proxy's 502
 * page, a 413 from a load balancer): tRPC's httpLink then fails without it, so `withResponseInMeta` puts it where
 * tRPC's errors carry it, and the link reads its status and `Retry-After`. A 2xx whose body breaks off keeps
 * nothing: it is an answer lost on the way, retried with the same key.
 */
function keepingEveryAnswer(userFetch: TRPCFetch | undefined): TRPCFetch {
  return async (input, init) => {
    const answer = await (userFetch ?? globalThis.fetch)(input, init as RequestInit);
    const { status } = answer as { status?: number };
    if (status === undefined || status < 300) return answer;
    const json = answer.json.bind(answer);
    const keepingResponse = () =>
      json().catch((cause: unknown) => {
        throw Object.assign(new Error(`an HTTP ${status} answer whose body is not tRPC's JSON`, { cause }), {
          response: answer,
        });
      });
    try {
      return Object.assign(answer, { json: keepingResponse });
    } catch {
      // A frozen answer (some fetch mocks) is read as it is: without its status when its body is not JSON.
      return answer;
    }
  };
}

/** The answer `keepingEveryAnswer` kept on an error's cause, moved to the error's `meta.response`. */
function withResponseInMeta(sent: Observable<Envelope, TRPCClientError<AnyTRPCRouter>>) {
  return observable<Envelope, TRPCClientError<AnyTRPCRouter>>((observer) =>
    sent.subscribe({
      next: (envelope) => observer.next(envelope),
      complete: () => observer.complete(),
      error: (error) => {
        const response = (error.cause as { response?: unknown } | undefined)?.response;
        observer.error(response && !error.meta?.response ? TRPCClientError.from(error, { meta: { response } }) : error);
      },
    }),
  );
}

/** Headers in any form tRPC takes (a record, a `Headers`, entries) as a record, so that none is lost in the merge. */
function asRecord(headers: HTTPHeaders | undefined): Record<string, string> {
  if (headers === undefined) return {};
  return Object.fromEntries(new Headers(headers as HeadersInit));
}

function notTerminating(op: Operation): never {
  throw new Error(`httpLink called next() for ${op.path}: it is a terminating link`);
}
