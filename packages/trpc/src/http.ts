/**
 * Where the middleware meets HTTP: reading the key header, setting response headers, and counting the calls of
 * a batch. By default it finds them on the context that tRPC's adapters build: the fetch adapter's
 * `{ req: Request, resHeaders: Headers }` and the Node adapters' `{ req: IncomingMessage, res: ServerResponse }`.
 * An app whose context holds them elsewhere passes `http` to `idempotency()`.
 */

/** The HTTP surface the middleware needs, for one request. */
export interface IdempotencyHttp {
  /** A request header's value, or null/undefined when absent. Names are case-insensitive. */
  header(name: string): string | null | undefined;
  /** Sets a header on the response (replay marker, Retry-After). */
  setHeader(name: string, value: string): void;
  /** How many procedure calls the HTTP request carries (more than 1 for a batch). */
  calls: number;
}

interface FetchLikeRequest {
  url?: string;
  headers: { get(name: string): string | null } | Record<string, string | string[] | undefined>;
}

interface ContextWithHttp {
  req?: FetchLikeRequest;
  resHeaders?: { set(name: string, value: string): void };
  res?: { setHeader(name: string, value: string): unknown };
  info?: { calls?: readonly unknown[] };
}

/** Reads the HTTP surface from the context the fetch or Node adapter built; throws when there is none. */
export function httpFromContext(ctx: unknown): IdempotencyHttp {
  const { req, resHeaders, res, info } = (ctx ?? {}) as ContextWithHttp;
  if (!req?.headers) {
    throw new Error(
      "idempotency(): the tRPC context has no `req`. Return `req` (and `resHeaders`) from createContext, " +
        "or pass the `http` option to say where the request is.",
    );
  }
  const { headers } = req;
  return {
    header: (name) => {
      if (typeof headers.get === "function") return headers.get(name);
      const value = (headers as Record<string, string | string[] | undefined>)[name.toLowerCase()];
      return Array.isArray(value) ? value.join(", ") : value;
    },
    setHeader: (name, value) => {
      if (resHeaders) resHeaders.set(name, value);
      else res?.setHeader(name, value);
    },
    calls: info?.calls?.length ?? callsInUrl(req.url),
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
