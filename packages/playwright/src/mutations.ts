/**
 * What the page sent: every tRPC mutation request it made, with its Idempotency-Key, its attempt under that key and
 * what came back. The record the assertions read, and what their failure messages print.
 */
import type { Page, Request } from "@playwright/test";

/** Which requests are the form's mutations. */
export interface MutationFilter {
  /** The path the app's tRPC handler is mounted at, with or without its trailing slash. Default `/api/trpc`. */
  endpoint?: string;
  /** Only this procedure, by its dotted path (`checkout.placeOrder`). Default: every mutation under the endpoint. */
  procedure?: string;
  /**
   * Server Action submissions instead of tRPC mutations (`idempotentAction` from `@idemkit/next`): a POST with a
   * `Next-Action` header (the page runs JavaScript) or with React's `$ACTION_` form fields (it does not), to any page
   * or to `{ page: "/checkout" }` only (the page the form posts to: a `useActionState` permalink's, before the page
   * runs JavaScript). Their key is the form's `idempotency-key` field. The lookups
   * `useIdempotentActionState` sends after a reload run nothing and are left out. `endpoint` and `procedure` are
   * then not read.
   */
  serverActions?: true | { page: string };
}

/**
 * The form field a Server Action submission carries its key in, and the one that marks a lookup (`@idemkit/next`'s
 * names), as the browser sends them, or React does for a FormData it sends as an argument (`_1_idempotency-key`).
 */
const KEY_FIELD = /^(?:\w*_\d+_)?idempotency-key$/;
const LOOKUP_FIELD = /^(?:\w*_\d+_)?idempotency-lookup$/;

/** One mutation request as the page sent it. */
export interface SentMutation {
  procedure: string;
  /** The `Idempotency-Key` header; undefined when the request had none. */
  key: string | undefined;
  /** 1 for the first request with this key, 2 for the next (a retry, a second press), and so on; 1 without a key. */
  attempt: number;
  /** The HTTP status; `"failed"` when no answer reached the page (offline, reset, aborted); `"pending"` until then. */
  status: number | "failed" | "pending";
  /** Why it failed, as the browser says (`net::ERR_CONNECTION_RESET`), when it did. */
  failure?: string;
  /** True when the server answered from its store (`Idempotent-Replayed: true`). */
  replayed: boolean;
  /** Set when one of this package's faults answered or dropped it (which one), rather than the app's server. */
  injected?: string;
}

/** The mutations a page sent, as they happened. */
export interface MutationLog {
  readonly sent: readonly SentMutation[];
  /** The distinct keys, in the order they were first sent. */
  keys(): string[];
  /**
   * Resolves once every request sent so far has its answer, or failed, and no new one came for `quietMs` (500 by
   * default) since the call: a retry waiting out its backoff, or a press queued behind the first answer, is still
   * seen, and so is a press whose request reaches the log only after a slow page handed control back.
   */
  settled(options?: { quietMs?: number }): Promise<void>;
  /** A table of what was sent, one request per line (and the other POSTs, when none matched): what failures print. */
  toString(): string;
}

/** The endpoint as a path prefix that ends with a slash. */
export function endpointOf(filter: MutationFilter): string {
  const endpoint = filter.endpoint ?? "/api/trpc";
  return endpoint.endsWith("/") ? endpoint : `${endpoint}/`;
}

/**
 * Whether `request` is a mutation `filter` selects: a POST under the endpoint, to that procedure if one is named;
 * or with `serverActions`, a Server Action submission.
 */
export function isMutation(request: Request, filter: MutationFilter = {}): boolean {
  if (request.method() !== "POST") return false;
  if (filter.serverActions) return isActionSubmission(request, filter.serverActions);
  const endpoint = endpointOf(filter);
  const { pathname } = new URL(request.url());
  if (!pathname.startsWith(endpoint)) return false;
  return filter.procedure === undefined || pathname.slice(endpoint.length) === filter.procedure;
}

/**
 * A Server Action call, to the page `on` names when it names one: with JavaScript, Next.js sends it with a
 * `Next-Action` header; without, the browser posts the form with the fields React rendered into it (`$ACTION_ID_…`,
 * or `$ACTION_REF_…` for a `useActionState` form).
 */
function isActionSubmission(request: Request, on: true | { page: string }): boolean {
  if (on !== true && new URL(request.url()).pathname !== on.page) return false;
  const fields = formFields(request);
  if ([...fields.keys()].some((name) => LOOKUP_FIELD.test(name))) return false;
  return (
    request.headers()["next-action"] !== undefined || [...fields.keys()].some((name) => name.startsWith("$ACTION_"))
  );
}

/** The text fields of a form post (multipart or urlencoded); files are left out. */
function formFields(request: Request): Map<string, string> {
  const fields = new Map<string, string>();
  const type = request.headers()["content-type"] ?? "";
  const body = request.postDataBuffer()?.toString("latin1") ?? "";
  if (type.startsWith("application/x-www-form-urlencoded")) {
    for (const [name, value] of new URLSearchParams(body)) fields.set(name, value);
    return fields;
  }
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(type);
  if (!type.startsWith("multipart/form-data") || !boundary) return fields;
  for (const part of body.split(`--${boundary[1] ?? boundary[2]}`)) {
    const [head, ...rest] = part.split("\r\n\r\n");
    const name = /name="([^"]*)"/.exec(head ?? "")?.[1];
    if (name === undefined || /filename="/.test(head ?? "")) continue;
    fields.set(name, Buffer.from(rest.join("\r\n\r\n").replace(/\r\n$/, ""), "latin1").toString("utf8"));
  }
  return fields;
}

/** The key a mutation carries: its `Idempotency-Key` header, or a Server Action form's key field. */
function keyOf(request: Request, filter: MutationFilter): string | undefined {
  if (!filter.serverActions) return request.headers()["idempotency-key"];
  for (const [name, value] of formFields(request)) if (KEY_FIELD.test(name)) return value;
  return undefined;
}

/** What the log calls a mutation: its procedure, or for a Server Action its id (or the page a form posted to). */
function procedureOf(request: Request, filter: MutationFilter): string {
  const { pathname } = new URL(request.url());
  if (!filter.serverActions) return pathname.slice(endpointOf(filter).length);
  const id = request.headers()["next-action"];
  return id ? `action ${id.slice(0, 12)}` : `form post to ${pathname}`;
}

/** What `filter` watches, for the messages. */
export function watchedBy(filter: MutationFilter): string {
  if (!filter.serverActions) return `POSTs to ${endpointOf(filter)}${filter.procedure ?? "*"}`;
  return `Server Action submissions${filter.serverActions === true ? "" : ` to ${filter.serverActions.page}`}`;
}

/** What this package's faults did to a request, for the log to say. */
const injectedFaults = new WeakMap<Request, string>();

/** Marks `request` as answered or dropped by the fault `name`. */
export function markInjected(request: Request, name: string): void {
  injectedFaults.set(request, name);
}

/**
 * Starts recording the mutations `page` sends (all tRPC mutations under `/api/trpc/`, or those `filter` selects).
 * Call it before the user acts; read it, or hand it to the assertions, after.
 */
export function watchMutations(page: Page, filter: MutationFilter = {}): MutationLog {
  const sent: SentMutation[] = [];
  const otherPosts: string[] = [];
  const pending = new Map<Request, SentMutation>();
  let lastChange = Date.now();
  let changed: () => void = () => {};
  const touch = () => {
    lastChange = Date.now();
    changed();
  };
  const finish = (request: Request, status: SentMutation["status"], replayed = false) => {
    const entry = pending.get(request);
    if (!entry) return;
    pending.delete(request);
    entry.status = status;
    entry.replayed = replayed;
    const failure = status === "failed" ? request.failure()?.errorText : undefined;
    if (failure) entry.failure = failure;
    const injected = injectedFaults.get(request);
    if (injected) entry.injected = injected;
    touch();
  };

  page.on("request", (request) => {
    const redirected = request.redirectedFrom();
    const earlier = redirected && pending.get(redirected);
    if (earlier) {
      // A redirect is the same attempt, followed: the entry moves to the request that carries it on.
      pending.delete(redirected);
      pending.set(request, earlier);
      return;
    }
    if (!isMutation(request, filter)) {
      if (request.method() === "POST") otherPosts.push(new URL(request.url()).pathname);
      return;
    }
    const key = keyOf(request, filter);
    const entry: SentMutation = {
      procedure: procedureOf(request, filter),
      key,
      attempt: key === undefined ? 1 : sent.filter((other) => other.key === key).length + 1,
      status: "pending",
      replayed: false,
    };
    sent.push(entry);
    pending.set(request, entry);
    touch();
  });
  page.on("response", (response) => {
    finish(response.request(), response.status(), response.headers()["idempotent-replayed"] === "true");
  });
  page.on("requestfailed", (request) => finish(request, "failed"));
  // A page that closes or crashes leaves its unanswered requests with no answer at all.
  const abandonAll = () => {
    for (const request of [...pending.keys()]) finish(request, "failed");
  };
  page.on("close", abandonAll);
  page.on("crash", abandonAll);

  return {
    sent,
    keys: () => [...new Set(sent.map((entry) => entry.key).filter((key): key is string => key !== undefined))],
    async settled({ quietMs = 500 } = {}) {
      // Quiet is counted from the call as well: on a loaded machine the user's press can take longer than quietMs
      // to hand back, and a log that had been quiet since it was made would settle before its first request.
      const calledAt = Date.now();
      for (;;) {
        const waitMs = Math.max(lastChange, calledAt) + quietMs - Date.now();
        if (pending.size === 0 && waitMs <= 0) return;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.max(waitMs, 50));
          changed = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        changed = () => {};
      }
    },
    toString: () => describeSent(sent, otherPosts, filter),
  };
}

/** The requests as a table: `#. procedure  key  attempt  → status`. */
function describeSent(sent: readonly SentMutation[], otherPosts: string[], filter: MutationFilter): string {
  if (sent.length === 0) {
    const looked = watchedBy(filter);
    const others = otherPosts.length > 0 ? `; other POSTs the page sent: ${otherPosts.join(", ")}` : "";
    return `  (no mutation was sent: watched for ${looked}${others})`;
  }
  return sent
    .map((entry, index) => {
      const reason = [entry.failure, entry.injected && `injected by ${entry.injected}`].filter(Boolean).join(", ");
      const status = `${entry.status}${entry.replayed ? " (replayed)" : ""}${reason ? ` (${reason})` : ""}`;
      return `  ${index + 1}. ${entry.procedure}  key ${entry.key ?? "(none)"}  attempt ${entry.attempt}  → ${status}`;
    })
    .join("\n");
}
