/**
 * A storm of duplicates for a server test: the same request, with one Idempotency-Key, sent many times at once
 * (and a few times after the first answer) through the app's real HTTP handler, with a report of what came back
 * and how many times its effect happened. Plain HTTP: a tRPC procedure, a route handler, any endpoint.
 */

/** Where the requests go: the app's origin (`http://127.0.0.1:3000`), or its Fetch handler itself. */
export type DuplicateTarget = string | ((request: Request) => Response | Promise<Response>);

/** What `fireDuplicates` sends, where, and how many times at once. */
export interface FireDuplicatesOptions {
  /** The app: its origin, or its Fetch handler (a route's `POST`, `(req) => fetchRequestHandler({ req, ... })`). */
  target: DuplicateTarget;
  /** The endpoint's path, with its query: `/api/orders`, or a tRPC procedure's `/api/trpc/checkout.placeOrder`. */
  path: string;
  /** The request body: a string as it is, anything else as JSON (a tRPC input as its transformer serializes it). */
  body?: unknown;
  /** The method. Default POST. */
  method?: string;
  /** The key all duplicates share. Default: a new UUID. */
  key?: string;
  /** Sent with every request: the cookie or authorization that makes the caller a user. */
  headers?: Record<string, string>;
  /** How many are sent at once. Default 10. */
  concurrent?: number;
  /** How many are sent one after another once all of those have their answer. Default 2. */
  late?: number;
  /** Reads how many times the effect happened (a count of rows, calls to a fake provider). */
  count?: () => Promise<number>;
}

/** One answer of the storm. */
export interface DuplicateAnswer {
  /** The HTTP status; 0 when no answer came (the connection failed: `body` says why). */
  status: number;
  /** `Idempotent-Replayed: true`: answered from the store, the handler did not run for it. */
  replayed: boolean;
  /** Sent after every concurrent one had its answer. */
  late: boolean;
  body: string;
}

/** What `fireDuplicates` saw: the key it used, and each answer with its status, body and headers. */
export interface DuplicateReport {
  key: string;
  answers: DuplicateAnswer[];
  /** How many answers had each status: `{ 200: 11, 409: 1 }`. */
  statuses: Record<number, number>;
  /** How many answers were replays. */
  replays: number;
  /** How many times the effect happened during the storm, when `count` was given. */
  ran: number | undefined;
  /** The report as lines, for a failure message. */
  toString(): string;
}

/**
 * Sends `concurrent` copies of one request at once with one key, then `late` more one by one, and reports the
 * statuses, the replays and (with `count`) how many times its effect happened: exactly once is the contract.
 */
export async function fireDuplicates(options: FireDuplicatesOptions): Promise<DuplicateReport> {
  const { concurrent = 10, late = 2, count } = options;
  const key = options.key ?? globalThis.crypto.randomUUID();
  const before = await count?.();
  const send = async (isLate: boolean): Promise<DuplicateAnswer> => {
    try {
      const response = await deliver(options, key);
      return {
        status: response.status,
        replayed: response.headers.get("idempotent-replayed") === "true",
        late: isLate,
        body: await response.text(),
      };
    } catch (error) {
      return { status: 0, replayed: false, late: isLate, body: String(error) };
    }
  };
  const answers = await Promise.all(Array.from({ length: concurrent }, () => send(false)));
  for (let index = 0; index < late; index++) answers.push(await send(true));
  const statuses: Record<number, number> = {};
  for (const { status } of answers) statuses[status] = (statuses[status] ?? 0) + 1;
  const replays = answers.filter((answer) => answer.replayed).length;
  const ran = count ? (await count()) - (before ?? 0) : undefined;
  const report = { key, answers, statuses, replays, ran } as DuplicateReport;
  // Not an own enumerable property: a report compared with toEqual shows its data, not a function.
  Object.defineProperty(report, "toString", {
    enumerable: false,
    value: () =>
      [
        `${answers.length} requests with key ${key}: ${Object.entries(statuses)
          .map(([status, times]) => `${times} × ${status}`)
          .join(", ")}; ${replays} replayed${ran === undefined ? "" : `; the effect happened ${ran} time(s)`}`,
        ...answers.map(
          (answer, index) =>
            `  ${index + 1}. ${answer.late ? "late" : "concurrent"}  ${answer.status}${answer.replayed ? " (replayed)" : ""}  ${answer.body.slice(0, 120)}`,
        ),
      ].join("\n"),
  });
  return report;
}

function deliver(options: FireDuplicatesOptions, key: string): Promise<Response> {
  const { target, path, body, method = "POST" } = options;
  // The storm's key wins over one given in `headers`, whatever its case.
  const headers = Object.fromEntries(
    Object.entries(options.headers ?? {}).filter(([name]) => name.toLowerCase() !== "idempotency-key"),
  );
  const origin = typeof target === "string" ? target.replace(/\/$/, "") : "http://idemkit.test";
  const request = new Request(`${origin}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers, "idempotency-key": key },
    ...(body !== undefined && { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  return typeof target === "string" ? fetch(request) : Promise.resolve(target(request));
}
