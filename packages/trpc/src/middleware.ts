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
  type CallLimits,
  createIdempotencyEngine,
  fingerprintAsync,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  type IdempotencyContext,
  type IdempotencyEngineOptions,
  IdempotencyError,
  IdempotencyErrorCode,
  type IdempotencyEvent,
  IdempotencyMode,
  type IdempotencyStore,
  isIdempotencyError,
  type ModeTransaction,
  parseIdempotencyKey,
  type RecordId,
  type TelemetryOptions,
  transactionBypassIn,
} from "@idemkit/core";
import type { ModeOptions, Settlement } from "@idemkit/core/adapter";
import { causeChain, checkedScope, idempotencyContextOf } from "@idemkit/core/internal";
import type { DefaultModeOf, ModesOf } from "@idemkit/core/store";
import { initTRPC, TRPCError } from "@trpc/server";
import { toTRPCError } from "./errors.js";
import { explicitKeyOf, httpFromContext, type IdempotencyHttp } from "./http.js";
import { storableStatus } from "./outcome.js";
import { replayedResult } from "./replay.js";
import { type IdempotencyTransformer, outputTransformer, type StoredBody } from "./stored-body.js";

/** What every protected mutation takes, whatever its mode. */
export interface IdempotencyCommonOptions<TCtx extends object, TStore extends IdempotencyStore<unknown>, TMode> {
  /** Where records live: `drizzleStore({ db })` in production, `memoryStore()` in unit tests. */
  store: TStore;
  /**
   * Who owns the record, from the context: the user or tenant id. Required, so one user can never replay, see
   * or block another user's result by sending the same key.
   */
  scope: (opts: { ctx: TCtx }) => string | Promise<string>;
  /**
   * `atomic` (the default with a store that supports it): the procedure writes through `ctx.idempotency.tx`,
   * in the same transaction as the claim and the stored result. `lease`: for work whose effects leave the
   * database; the claim is committed first with a lease, and a crashed request is taken over when it ends.
   */
  mode?: TMode & ModesOf<TStore>;
  /** The router's data transformer (e.g. `superjson`), so stored results replay with their types. */
  transformer?: IdempotencyTransformer;
  /** How long results are replayed, in ms. Default 24 hours. */
  ttlMs?: number;
  /**
   * The longest one store call may take (a claim, the commit), in ms, before the request is answered 503
   * `STORE_UNAVAILABLE` with `Retry-After` instead of waiting on a database that does not answer. Default 5 s.
   */
  storeTimeoutMs?: number;
  /** Completed results cached in memory for cheap replays; 0 turns it off. Default 10,000. */
  replayCacheSize?: number;
  /**
   * Store 5xx and unexpected errors too, so retries replay the failure instead of running again. Off by
   * default: a server error is usually worth retrying.
   */
  storeServerErrors?: boolean;
  /**
   * Where the request headers and response headers are. Default: the fetch adapter's `req`/`resHeaders`, the
   * Node adapters' `req`/`res`, or create-t3-app's `headers` (see `httpFromContext`). Return undefined for a
   * call without HTTP; it then needs a key from `withIdempotencyKey`.
   */
  http?: (ctx: TCtx) => IdempotencyHttp | undefined;
  /** The clock, in ms since the epoch. For tests that move time. */
  now?: () => number;
  /** Called for every decision (executed, replayed, conflict, mismatch, takeover, released, ...). */
  onEvent?: (event: IdempotencyEvent) => void;
  /** Where spans and metrics go: the global OpenTelemetry providers by default (no-ops without an SDK); false for none. */
  telemetry?: TelemetryOptions | false;
  /**
   * Abuse limits per scope, in this process: calls running at once, new keys per window; past them a call is
   * refused 429 TOO_MANY_REQUESTS with `Retry-After`, and nothing runs. Off by default.
   */
  limits?: CallLimits;
  /**
   * What is kept of a result for replays: gets the stored body (JSON, `{"result": …}` serialized with
   * `transformer`) and returns what to store in its place. The first caller gets the whole result. Default: all.
   */
  redact?: (body: string, id: RecordId) => string;
}

/**
 * Atomic mode's own option of the middleware: the context key your procedures already write with, such as
 * create-t3-app's `"db"`. In a protected mutation `ctx[dbKey]` is then the idempotent transaction (the same one as
 * `ctx.idempotency.tx`), so an existing procedure body becomes exactly-once without edits. It must hold the database
 * the store was given. Default: none, and procedures write through `ctx.idempotency.tx`. Lease mode has no
 * transaction to hand over: there it does not compile.
 */
export type IdempotencyDbKeyOption<TMode, TDbKey extends string> = [TMode] extends ["atomic"]
  ? { dbKey?: TDbKey }
  : { dbKey?: never };

/**
 * The middleware's options for `TMode`, which is read from the store (see `DefaultModeOf`) unless `mode` is given:
 * the common ones, and the engine's options of that mode (`transactionTimeoutMs` in atomic mode; `leaseMs`,
 * `maxHoldMs`, `procedureTimeoutMs` and `waitUntil` in lease mode), the other mode's refused at compile time.
 */
export type IdempotencyOptions<
  TCtx extends object,
  TStore extends IdempotencyStore<unknown>,
  TMode extends IdempotencyMode,
  TDbKey extends string = never,
> = IdempotencyCommonOptions<TCtx, TStore, TMode> & ModeOptions<TMode> & IdempotencyDbKeyOption<TMode, TDbKey>;

/**
 * The middleware for protected mutations. Use it with `.use()` on the procedure your mutations are built from:
 *
 *   const idempotentProcedure = protectedProcedure.use(idempotency({
 *     store: drizzleStore({ db }), dbKey: "db", transformer: superjson,
 *     scope: ({ ctx }) => ctx.session.user.id,
 *   }));
 *   create: idempotentProcedure.input(schema).mutation(({ ctx, input }) => ctx.db.insert(posts).values(input))
 */
export function idempotency<
  TCtx extends object,
  TStore extends IdempotencyStore<unknown>,
  TMode extends IdempotencyMode = DefaultModeOf<TStore>,
  TDbKey extends Extract<keyof TCtx, string> = never,
>(options: IdempotencyOptions<TCtx, TStore, TMode, TDbKey>) {
  type Tx = ModeTransaction<TStore, TMode>;
  type Overrides = { idempotency: IdempotencyContext<Tx> } & { [K in TDbKey]: Tx };
  const { scope: scopeOf, storeServerErrors = false, http = httpFromContext } = options;
  // Refused by the types outside atomic mode; read as it is, for callers without them (JavaScript).
  const { dbKey } = options as { dbKey?: TDbKey };
  // The other mode's options are typed as messages (see ModeOptions), never set: the engine's own types hold.
  const engine = createIdempotencyEngine<unknown>(options as IdempotencyEngineOptions<unknown>);
  if (dbKey !== undefined && engine.mode !== IdempotencyMode.ATOMIC) {
    throw new TypeError(
      "idempotency(): `dbKey` puts the idempotent transaction on the context, and only atomic mode has one " +
        "(a store with transactions, such as drizzleStore, in its default mode).",
    );
  }
  const database = options.store.atomic?.database;
  const transformer = outputTransformer(options.transformer);
  const t = initTRPC.context<TCtx>().create();
  let warnedNoResponseHeaders = false;

  return t.middleware(async function idempotencyMiddleware(opts) {
    if (opts.type !== "mutation") return opts.next({ ctx: { idempotency: undefined } as unknown as Overrides });
    const ctx = opts.ctx as unknown as TCtx;
    const { path } = opts;
    let exchange: IdempotencyHttp | undefined;
    try {
      exchange = http(ctx);
      const explicitKey = explicitKeyOf(ctx);
      const key = parseIdempotencyKey(
        explicitKey ?? exchange?.header(IDEMPOTENCY_KEY_HEADER) ?? missingKey(path),
        path,
      );
      // Only a call that came with its key over HTTP can be answered with headers; server code needs none.
      if (explicitKey === undefined && !exchange?.setHeader && !warnedNoResponseHeaders) {
        warnedNoResponseHeaders = true;
        console.warn(NO_RESPONSE_HEADERS);
      }
      // A context without the adapter's `info` or the request URL (create-t3-app's) cannot count a batch's
      // calls; tRPC's batchIndex still tells every call after the first that it shares the request.
      const calls = Math.max(exchange?.calls ?? 1, opts.batchIndex + 1);
      if (calls > 1) {
        throw new IdempotencyError(
          IdempotencyErrorCode.KEY_SHARED_IN_BATCH,
          `One ${IDEMPOTENCY_KEY_HEADER} cannot cover the calls of a batch; send ${path} unbatched.`,
        );
      }
      if (dbKey !== undefined && database !== undefined && ctx[dbKey] !== database) {
        throw new TRPCError({
          code: "INTERNAL_SERVER_ERROR",
          message:
            `idempotency(): ctx.${dbKey} is not the database the store was given, so its writes could not join ` +
            "the idempotent transaction. Give the store the same `db` your context holds.",
        });
      }
      const scope = checkedScope(await scopeOf({ ctx }), "idempotency()");
      // A mutation without input may come with no body at all, which tRPC only fails to parse when something
      // asks for the input. Such a call is fingerprinted as having no input; should the procedure ask for it
      // anyway, its parser fails as it would without this middleware (with the error tRPC's adapter read it with,
      // which it keeps), and that failure is not stored.
      const input = await opts.getRawInput().then(
        (value) => ({ value, unreadable: undefined }),
        (error: unknown) => ({ value: undefined, unreadable: { error } }),
      );
      const request = { scope, path, key, fingerprint: await fingerprintOf(input.value) };

      const run = await engine.run(request, async (execution) => {
        const idempotencyContext = idempotencyContextOf<Tx>(request, execution);
        const overrides = { idempotency: idempotencyContext, ...(dbKey !== undefined && { [dbKey]: execution.tx }) };
        const result = explainBypass(await opts.next({ ctx: overrides as Overrides }));
        const inputUsable = !(input.unreadable && !result.ok && causedBy(result.error, input.unreadable.error));
        return execution.answer(() => settle(result, inputUsable));
      });
      if (!run.replayed) return run.value;
      exchange?.setHeader?.(IDEMPOTENT_REPLAYED_HEADER, "true");
      const body = JSON.parse(run.response.body) as StoredBody;
      if (body.error) throw new TRPCError(body.error);
      const data = "result" in body ? transformer.deserialize(body.result) : undefined;
      return replayedResult<Awaited<ReturnType<typeof opts.next>>>(data);
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
      const body: StoredBody = { result: transformer.serialize(result.data) };
      return { value: result, response: { status: 200, body: JSON.stringify(body) } };
    }
    const { error } = result;
    const status = storableStatus(error, { inputUsable, storeServerErrors });
    if (status === undefined) return { value: result, response: undefined };
    const stored: StoredBody = { error: { code: error.code, message: error.message } };
    return { value: result, response: { status, body: JSON.stringify(stored) } };
  }
}

/** Whether `error` is `cause`, or was caused by it. */
function causedBy(error: unknown, cause: unknown): boolean {
  for (const current of causeChain(error)) if (current === cause) return true;
  return false;
}

/**
 * The procedure's failure, said by the store's refusal of a statement that bypassed the transaction when that is
 * its cause: Drizzle reports the refused statement ("Failed query: …"), the refusal names the fix.
 */
function explainBypass<R extends { ok: true } | { ok: false; error: TRPCError }>(result: R): R {
  if (result.ok) return result;
  const bypass = transactionBypassIn(result.error);
  if (!bypass || result.error.message === bypass.message) return result;
  return { ...result, error: new TRPCError({ code: result.error.code, message: bypass.message, cause: result.error }) };
}

const NO_RESPONSE_HEADERS =
  "idempotency(): the tRPC context carries the request's headers but no response headers, so replays are " +
  "answered without `Idempotent-Replayed` (and 409s without `Retry-After`). Return the fetch adapter's " +
  "`resHeaders` (or a Node adapter's `res`) from createContext, and its `info` (which counts a batch's calls). In a " +
  "create-t3-app route handler: " +
  "`createContext: ({ resHeaders, info }) => createContext(req).then((ctx) => ({ ...ctx, resHeaders, info }))`.";

/** No key: neither a header nor one given by server code with `withIdempotencyKey`. */
function missingKey(path: string): never {
  throw new IdempotencyError(
    IdempotencyErrorCode.KEY_MISSING,
    `The ${IDEMPOTENCY_KEY_HEADER} header is required for ${path}. Server code calling it without HTTP ` +
      "(createCaller, a Server Component, a server action) passes one action's key with withIdempotencyKey(ctx, key).",
  );
}

/**
 * The input's fingerprint, files and binary data by their bytes; an input that cannot be compared by content (a
 * class instance, a stream, a cycle) is refused, not run.
 */
async function fingerprintOf(rawInput: unknown): Promise<string> {
  try {
    return await fingerprintAsync(rawInput);
  } catch (cause) {
    const reason = cause instanceof Error ? ` ${cause.message}` : "";
    throw new TRPCError({ code: "BAD_REQUEST", message: `The input cannot be fingerprinted.${reason}`, cause });
  }
}
