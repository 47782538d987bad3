/**
 * What the page sent: every tRPC mutation request it made, with its Idempotency-Key, its attempt under that key and
 * what came back. The record the assertions read, and what their failure messages print.
 */
import type { Page, Request } from "@playwright/test";

/** Which requests are the form's mutations. */
export interface MutationFilter {
  /** The path the app's tRPC handler is mounted at. Default `/api/trpc/`. */
  endpoint?: string;
  /** Only this procedure, by its dotted path (`checkout.placeOrder`). Default: every mutation under the endpoint. */
  procedure?: string;
}

/** One mutation request as the page sent it. */
export interface SentMutation {
  procedure: string;
  /** The `Idempotency-Key` header; undefined when the request had none. */
  key: string | undefined;
  /** 1 for the first request with this key, 2 for the next (a retry, a second press), and so on. */
  attempt: number;
  /** The HTTP status; `"failed"` when no answer reached the page (offline, reset, aborted); `"pending"` until then. */
  status: number | "failed" | "pending";
  /** True when the server answered from its store (`Idempotent-Replayed: true`). */
  replayed: boolean;
}

/** The mutations a page sent, as they happened. */
export interface MutationLog {
  readonly sent: readonly SentMutation[];
  /** The distinct keys, in the order they were first sent. */
  keys(): string[];
  /** Resolves once every request sent so far has its answer, or failed. */
  settled(): Promise<void>;
  /** A table of what was sent, one request per line: what failure messages print. */
  toString(): string;
}

/** Whether `request` is a mutation `filter` selects: a POST under the endpoint, to that procedure if one is named. */
export function isMutation(request: Request, { endpoint = "/api/trpc/", procedure }: MutationFilter = {}): boolean {
  if (request.method() !== "POST") return false;
  const { pathname } = new URL(request.url());
  if (!pathname.startsWith(endpoint)) return false;
  return procedure === undefined || pathname.slice(endpoint.length) === procedure;
}

/**
 * Starts recording the mutations `page` sends (all tRPC mutations under `/api/trpc/`, or those `filter` selects).
 * Call it before the user acts; read it, or hand it to the assertions, after.
 */
export function watchMutations(page: Page, filter: MutationFilter = {}): MutationLog {
  const endpoint = filter.endpoint ?? "/api/trpc/";
  const sent: SentMutation[] = [];
  const answered: Promise<void>[] = [];
  const entries = new Map<Request, { entry: SentMutation; done: () => void }>();
  const finish = (request: Request, status: SentMutation["status"], replayed = false) => {
    const found = entries.get(request);
    if (found?.entry.status !== "pending") return;
    found.entry.status = status;
    found.entry.replayed = replayed;
    found.done();
  };

  page.on("request", (request) => {
    if (!isMutation(request, filter)) return;
    const key = request.headers()["idempotency-key"];
    const entry: SentMutation = {
      procedure: new URL(request.url()).pathname.slice(endpoint.length),
      key,
      attempt: sent.filter((other) => other.key === key).length + 1,
      status: "pending",
      replayed: false,
    };
    sent.push(entry);
    answered.push(new Promise<void>((done) => entries.set(request, { entry, done })));
  });
  page.on("response", (response) => {
    finish(response.request(), response.status(), response.headers()["idempotent-replayed"] === "true");
  });
  page.on("requestfailed", (request) => finish(request, "failed"));
  // A page that closes or navigates away leaves its unanswered requests with no answer at all.
  page.on("close", () => {
    for (const request of entries.keys()) finish(request, "failed");
  });

  return {
    sent,
    keys: () => [...new Set(sent.map((entry) => entry.key).filter((key): key is string => key !== undefined))],
    settled: async () => {
      await Promise.all(answered);
    },
    toString: () => describeSent(sent),
  };
}

/** The requests as a table: `#  procedure  key  attempt  status`. */
function describeSent(sent: readonly SentMutation[]): string {
  if (sent.length === 0) return "  (no mutation was sent)";
  return sent
    .map((entry, index) => {
      const status = entry.replayed ? `${entry.status} (replayed)` : String(entry.status);
      return `  ${index + 1}. ${entry.procedure}  key ${entry.key ?? "(none)"}  attempt ${entry.attempt}  → ${status}`;
    })
    .join("\n");
}
