/**
 * `idempotency()`: the tRPC middleware that makes a mutation safe to retry. Per mutation call it reads the
 * `Idempotency-Key` header, fingerprints the input, and hands the call to the engine in `@idemkit/core`, which
 * runs it at most once per (scope, procedure, key) and replays the stored result to every duplicate.
 * Queries and subscriptions pass straight through.
 *
 * Results are stored through the router's data transformer (pass it as `transformer`), so a superjson `Date`
 * replays as a `Date`. Without one, results must be plain JSON, and anything else is refused loudly rather
 * than replayed as something else.
 */
import {
  createIdempotencyEngine,
  fingerprint,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  IdempotencyError,
  IdempotencyErrorCode,
  type IdempotencyEvent,
  type IdempotencyMode,
  type IdempotencyStore,
  isIdempotencyError,
  parseIdempotencyKey,
  type Settlement,
  type StoredResponse,
  sha256Hex,
} from "@idemkit/core";
import {
  initTRPC,
  StandardSchemaV1Error,
  type TRPC_ERROR_CODE_KEY,
  type TRPCCombinedDataTransformer,
  type TRPCDataTransformer,
  TRPCError,
} from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import { toTRPCError } from "./errors.js";
import { httpFromContext, type IdempotencyHttp } from "./http.js";

/** The transaction type a store hands to procedures in atomic mode. */
type TransactionOfStore<TStore> = TStore extends IdempotencyStore<infer Tx> ? Tx : never;

/** What a protected procedure finds on `ctx.idempotency`. */
export interface IdempotencyContext<Tx> {
  /** The validated `Idempotency-Key` of this call. */
  key: string;
  /** The scope this call's record belongs to. */
  scope: string;
  /**
   * Atomic mode: the transaction to write with. Writes made through it commit together with the stored
   * result, or not at all. Lease mode: undefined.
   */
  tx: Tx;
  /**
   * A stable key for a downstream call (a payment provider, another service), derived from this call's scope,
   * procedure and key: every retry of this call derives the same one, so the downstream call is idempotent
   * too. `name` tells several downstream calls of one procedure apart.
   */
  subKey(name: string): string;
}

/** How the middleware stores results: the router's transformer, or either half of a combined one. */
export type IdempotencyTransformer = TRPCDataTransformer | TRPCCombinedDataTransformer;

export interface IdempotencyOptions<
  TCtx extends object,
  TStore extends IdempotencyStore<unknown>,
  TMode extends IdempotencyMode,
> {
  /** Where records live: `drizzleStore({ db })` in production, `memoryStore()` in unit tests. */
  store: TStore;
  /**
   * Who owns the record, from the context: the user or tenant id. Required, so one user can never replay, see
   * or block another user's result by sending the same key. Annotate `ctx` with your context type.
   */
  scope: (opts: { ctx: TCtx }) => string | Promise<string>;
  /**
   * `atomic` (the default with a store that supports it): the procedure writes through `ctx.idempotency.tx`,
   * in the same transaction as the claim and the stored result. `lease`: for work whose effects leave the
   * database; the claim is committed first with a lease, and a crashed request is taken over when it ends.
   */
  mode?: TMode;
  /** The router's data transformer (e.g. `superjson`), so stored results replay with their types. */
  transformer?: IdempotencyTransformer;
  /** How long results are replayed, in ms. Default 24 hours. */
  ttlMs?: number;
  /** Lease mode: how long a claim protects a running call, in ms. Default 60 seconds. */
  leaseMs?: number;
  /** Completed results cached in memory for cheap replays; 0 turns it off. Default 10,000. */
  replayCacheSize?: number;
  /**
   * Store 5xx and unexpected errors too, so retries replay the failure instead of running again. Off by
   * default: a server error is usually worth retrying.
   */
  storeServerErrors?: boolean;
  /** Where the request headers and response headers are; default: the fetch or Node adapter's context. */
  http?: (ctx: TCtx) => IdempotencyHttp;
  /** The clock, in ms since the epoch. For tests that move time. */
  now?: () => number;
  /** Called for every decision (executed, replayed, conflict, mismatch, takeover, released, ...). */
  onEvent?: (event: IdempotencyEvent) => void;
}

/**
 * 4xx answers that mean "try again later" rather than "this request is wrong": storing them would replay a
 * transient refusal for the whole TTL.
 */
const TRANSIENT_CLIENT_ERRORS = new Set<TRPC_ERROR_CODE_KEY>([
  "TIMEOUT",
  "CONFLICT",
  "TOO_MANY_REQUESTS",
  "CLIENT_CLOSED_REQUEST",
  "PRECONDITION_FAILED",
]);

interface StoredBody {
  /** The procedure's result, serialized by the transformer. Absent when it returned undefined. */
  result?: unknown;
  error?: { code: TRPC_ERROR_CODE_KEY; message: string };
}

/**
 * The middleware for protected mutations. Use it with `.use()`:
 *
 *   const idempotent = t.procedure.use(idempotency({
 *     store: drizzleStore({ db }), transformer: superjson,
 *     scope: ({ ctx }: { ctx: Context }) => ctx.userId,
 *   }));
 *   placeOrder: idempotent.input(schema).mutation(({ ctx, input }) => ctx.idempotency.tx.insert(orders)...)
 */
export function idempotency<
  TCtx extends object,
  TStore extends IdempotencyStore<unknown>,
  TMode extends IdempotencyMode = "atomic",
>(options: IdempotencyOptions<TCtx, TStore, TMode>) {
  type Tx = TMode extends "lease" ? undefined : TransactionOfStore<TStore>;
  const { scope: scopeOf, storeServerErrors = false, http = httpFromContext } = options;
  const engine = createIdempotencyEngine<unknown>(options);
  const transformer = outputTransformer(options.transformer);
  const t = initTRPC.context<TCtx>().create();

  return t.middleware(async function idempotencyMiddleware(opts) {
    if (opts.type !== "mutation") {
      return opts.next({ ctx: { idempotency: undefined as never as IdempotencyContext<Tx> } });
    }
    const ctx = opts.ctx as unknown as TCtx;
    const { path } = opts;
    const exchange = http(ctx);
    try {
      const key = parseIdempotencyKey(exchange.header(IDEMPOTENCY_KEY_HEADER), path);
      if (exchange.calls > 1) {
        throw new IdempotencyError(
          IdempotencyErrorCode.KEY_SHARED_IN_BATCH,
          `One ${IDEMPOTENCY_KEY_HEADER} cannot cover the ${exchange.calls} calls of a batch; send ${path} unbatched.`,
        );
      }
      const scope = await scopeOf({ ctx });
      if (typeof scope !== "string" || scope.length === 0) {
        throw new TRPCError({
          code: "INTERNAL_SERVER_ERROR",
          message: "idempotency(): scope() must return a non-empty string.",
        });
      }
      // A mutation without input may come with no body at all, which tRPC only fails to parse when something
      // asks for the input. Such a call is fingerprinted as having no input; should the procedure ask for it
      // anyway, its parser fails as it would without this middleware, and that failure is not stored.
      const input = await opts.getRawInput().then(
        (value) => ({ value, readable: true }),
        () => ({ value: undefined, readable: false }),
      );
      let inputRequested = false;
      const getRawInput = () => {
        inputRequested = true;
        return opts.getRawInput();
      };
      const request = { scope, path, key, fingerprint: fingerprintOf(input.value) };
      const subKey = (name: string) => sha256Hex(JSON.stringify([scope, path, key, name])).slice(0, 40);

      const run = await engine.run(request, async ({ tx }) => {
        const idempotencyContext: IdempotencyContext<Tx> = { key, scope, tx: tx as Tx, subKey };
        // tRPC's next() takes ctx and getRawInput together at run time; its overloads just type them apart.
        const next = opts.next as (options: {
          ctx: { idempotency: IdempotencyContext<Tx> };
          getRawInput: typeof getRawInput;
        }) => ReturnType<typeof opts.next>;
        const result = await next({ ctx: { idempotency: idempotencyContext }, getRawInput });
        return settle(result, input.readable || !inputRequested);
      });
      if (!run.replayed) return run.value;
      exchange.setHeader(IDEMPOTENT_REPLAYED_HEADER, "true");
      const body = JSON.parse(run.response.body) as StoredBody;
      if (body.error) throw new TRPCError(body.error);
      // A replay answers without calling next(); tRPC checks only `ok` and `data` of a middleware result.
      const data = "result" in body ? transformer.deserialize(body.result) : undefined;
      return { ok: true as const, data, marker: undefined } as unknown as Awaited<ReturnType<typeof opts.next>>;
    } catch (error) {
      throw isIdempotencyError(error) ? toTRPCError(error, exchange) : error;
    }
  });

  /** Turns the procedure's outcome into what to store; undefined releases the key so a retry runs again. */
  function settle<R extends { ok: true; data: unknown } | { ok: false; error: TRPCError }>(
    result: R,
    inputUsable: boolean,
  ): Settlement<R> {
    if (result.ok) {
      const response: StoredResponse = {
        status: 200,
        body: JSON.stringify({ result: transformer.serialize(result.data) }),
      };
      return { value: result, response };
    }
    const { error } = result;
    const status = getHTTPStatusCodeFromError(error);
    const storable =
      inputUsable &&
      ((status < 500 && !TRANSIENT_CLIENT_ERRORS.has(error.code) && !isInputValidationError(error)) ||
        (status >= 500 && storeServerErrors));
    if (!storable) return { value: result, response: undefined };
    const stored: StoredBody = { error: { code: error.code, message: error.message } };
    return { value: result, response: { status, body: JSON.stringify(stored) } };
  }
}

/** The input's fingerprint; an input that cannot be compared (a function, a cycle) is refused, not run. */
function fingerprintOf(rawInput: unknown): string {
  try {
    return fingerprint(rawInput);
  } catch (cause) {
    throw new TRPCError({ code: "BAD_REQUEST", message: "The input cannot be fingerprinted.", cause });
  }
}

/** A failure of the procedure's input parser: the call never started, so nothing is stored. */
function isInputValidationError(error: TRPCError): boolean {
  const { cause } = error;
  return (
    error.code === "BAD_REQUEST" &&
    (cause instanceof StandardSchemaV1Error ||
      (typeof cause === "object" && cause !== null && Array.isArray((cause as { issues?: unknown }).issues)))
  );
}

function outputTransformer(transformer: IdempotencyTransformer | undefined): TRPCDataTransformer {
  if (!transformer) return plainJson;
  return "output" in transformer ? transformer.output : transformer;
}

/** Without a transformer, only values that survive JSON unchanged can be stored: anything else is refused. */
const plainJson: TRPCDataTransformer = {
  serialize(value: unknown) {
    assertPlainJson(value, "result");
    return value;
  },
  deserialize: (value: unknown) => value,
};

function assertPlainJson(value: unknown, where: string): void {
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number" && Number.isFinite(value)) return;
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      assertPlainJson(item, `${where}[${index}]`);
    });
    return;
  }
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [name, member] of Object.entries(value)) {
      if (member !== undefined) assertPlainJson(member, `${where}.${name}`);
    }
    return;
  }
  if (value === undefined && where === "result") return;
  throw new TypeError(
    `idempotency(): ${where} is not plain JSON (${Object.prototype.toString.call(value)}) and would not replay ` +
      "as it was. Pass your router's transformer (e.g. superjson) as the `transformer` option.",
  );
}
