/**
 * Where the middleware meets HTTP: reading the key header, setting response headers, and counting the calls of
 * a batch. By default it finds them on the contexts apps really build:
 * - tRPC's fetch adapter (Next.js route handlers): `{ req: Request, resHeaders: Headers }`;
 * - tRPC's Node adapters: `{ req: IncomingMessage, res: ServerResponse }`;
 * - create-t3-app: `{ headers: Headers }`, plus `resHeaders` once its route handler hands them through.
 * An app whose context holds them elsewhere passes `http` to `idempotency()`. Code that calls a procedure without
 * an HTTP request (`createCaller`, a Server Component) passes its key with {@link withIdempotencyKey}.
 */

/** The HTTP surface the middleware needs, for one request. */
export interface IdempotencyHttp {
  /** A request header's value, or null/undefined when absent. Names are case-insensitive. */
  header(name: string): string | null | undefined;
  /**
   * Sets a header on the response (the replay marker, Retry-After). Absent when the context offers no response
   * to set it on: the call is still protected, but a replay cannot say it is one.
   */
  setHeader?: ((name: string, value: string) => void) | undefined;
  /** How many procedure calls the HTTP request carries (more than 1 for a batch). */
  calls: number;
}

type HeaderBag = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

interface ContextWithHttp {
  req?: { url?: string; headers?: HeaderBag };
  headers?: HeaderBag;
  resHeaders?: { set(name: string, value: string): void };
  res?: { setHeader(name: string, value: string): unknown };
  info?: { calls?: readonly unknown[] };
}

const EXPLICIT_KEY = Symbol.for("idemkit.idempotencyKey");

/**
 * A copy of `ctx` that carries an idempotency key, for calls that have no HTTP request to send a header with:
 * `createCaller(withIdempotencyKey(ctx, key))`, a Server Component, a server action, a script. The key is then
 * used instead of any `Idempotency-Key` header; like a header, it is validated and one key means one action.
 */
export function withIdempotencyKey<TCtx extends object>(ctx: TCtx, key: string): TCtx {
  return { ...ctx, [EXPLICIT_KEY]: key };
}

/** The key that {@link withIdempotencyKey} put on a context, if any. */
export function explicitKeyOf(ctx: object): string | undefined {
  const key = (ctx as Record<symbol, unknown>)[EXPLICIT_KEY];
  return typeof key === "string" ? key : undefined;
}

/**
 * Reads the HTTP surface from the context that an adapter, or create-t3-app's `createTRPCContext`, built.
 * Undefined when the context carries no request at all (a server-side caller); throws when it carries one the
 * middleware cannot read, naming the fix.
 */
export function httpFromContext(ctx: unknown): IdempotencyHttp | undefined {
  const { req, headers: contextHeaders, resHeaders, res, info } = (ctx ?? {}) as ContextWithHttp;
  const headers = req ? req.headers : contextHeaders;
  if (headers === undefined && req === undefined) return undefined;
  if (typeof headers !== "object" || headers === null) {
    throw new TypeError(
      "idempotency(): the tRPC context has a `req` without readable headers. Return the adapter's `req` " +
        "(a Fetch Request or a Node IncomingMessage) or `headers` from createContext, or pass the `http` option.",
    );
  }
  return {
    header: (name) => {
      if (typeof headers.get === "function") return headers.get(name);
      // Node lowercases header names; a plain object built by hand may not have.
      const record = headers as Record<string, string | string[] | undefined>;
      const lower = name.toLowerCase();
      const field =
        lower in record ? lower : Object.keys(record).find((candidate) => candidate.toLowerCase() === lower);
      const value = field === undefined ? undefined : record[field];
      return Array.isArray(value) ? value.join(", ") : value;
    },
    setHeader: resHeaders
      ? (name, value) => resHeaders.set(name, value)
      : res
        ? (name, value) => void res.setHeader(name, value)
        : undefined,
    calls: info?.calls?.length ?? callsInUrl(req?.url),
  };
}

/** A batch URL names its procedures comma-separated in the last path segment: `/api/trpc/a,b?batch=1`. */
function callsInUrl(url: string | undefined): number {
  if (!url) return 1;
  const { pathname, searchParams } = new URL(url, "http://localhost");
  if (searchParams.get("batch") !== "1") return 1;
  const last = pathname.slice(pathname.lastIndexOf("/") + 1);
  return decodeURIComponent(last).split(",").length;
}
