/**
 * Faults against the built demo as real processes: `next start` instances on one PostgreSQL, clients that place
 * orders through them and retry with the same key as the idemkit link would, and the database taken away under
 * them. Used by the availability tests (small) and by `npm run chaos` (larger, printing a table).
 *
 * Every client action is one user (its own `uid`) and one key, so the orders table says afterwards whether any
 * action was charged twice (duplicates) or answered 200 without its order (lost).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import superjson from "superjson";

const APP_DIR = fileURLToPath(new URL("..", import.meta.url));
const NEXT = fileURLToPath(new URL("../../../node_modules/next/dist/bin/next", import.meta.url));

/** A line of a process's log that reports an exception nothing caught. */
const UNCAUGHT = /uncaughtException|unhandledRejection|Cannot read properties of null \(reading 'write'\)/;

/** How often a starting instance is asked again: it gives no other signal that it is ready. */
const POLL_INTERVAL_MS = 200;

export interface Instance {
  name: string;
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** Kills the process at once (SIGKILL), as a crash would. */
  kill(): void;
  /** Sends SIGTERM, as a deploy would; resolves with the exit code once the process has exited. */
  terminate(): Promise<number | null>;
  /**
   * How many uncaught exceptions and unhandled rejections this process logged (Next.js logs them and goes on), such
   * as postgres.js's "reading 'write'" TypeError (see docs/failure-behaviour.md).
   */
  uncaught(): number;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The processes started here, killed when the caller's process ends, whatever happened. */
const started = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of started) child.kill("SIGKILL");
});

/** Starts the built demo (`next start`) on a free port against `databaseUrl`, with `env` added to its environment. */
export async function startInstance(
  name: string,
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<Instance> {
  if (!existsSync(`${APP_DIR}/.next/BUILD_ID`)) throw new Error("apps/web is not built: npm run build");
  const port = await freePort();
  const child = spawn(process.execPath, [NEXT, "start", "-p", String(port)], {
    cwd: APP_DIR,
    env: { ...process.env, ...env, DATABASE_URL: databaseUrl, PORT: String(port), NEXT_TELEMETRY_DISABLED: "1" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  started.add(child);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  child.once("exit", () => started.delete(child));
  let uncaught = 0;
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    uncaught += chunk.split("\n").filter((line) => UNCAUGHT.test(line)).length;
  });
  return {
    name,
    base: `http://127.0.0.1:${port}`,
    kill: () => child.kill("SIGKILL"),
    terminate: () => {
      child.kill("SIGTERM");
      return exited;
    },
    uncaught: () => uncaught,
  };
}

/** Asks until `url` answers with `status`; gives up after `timeoutMs`. Returns the answer. */
export async function answered(url: string, status: number, init?: RequestInit, timeoutMs = 60_000) {
  let last = "no answer";
  for (const startedAt = Date.now(); Date.now() - startedAt < timeoutMs; ) {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
    if (response?.status === status) return response;
    last = response ? `${response.status} ${await response.text()}` : "no answer";
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
  throw new Error(`${url} never answered ${status}; last: ${last}`);
}

/** Waits until the instance's /api/health says ready; returns how long that took, in ms. */
export async function ready(instance: Instance, timeoutMs = 60_000): Promise<number> {
  const startedAt = performance.now();
  await answered(`${instance.base}/api/health`, 200, undefined, timeoutMs);
  return Math.round(performance.now() - startedAt);
}

/** The cart every action orders. */
const CART = superjson.serialize({ items: [{ sku: "tea", qty: 1 }] });

/** One POST of placeOrder: its status, or "none" when no answer came (connection refused, reset, or too slow). */
export async function placeOrder(base: string, user: string, key: string, answerLimitMs = 60_000) {
  const response = await fetch(`${base}/api/trpc/checkout.placeOrder`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: `uid=${user}`, "idempotency-key": key },
    body: JSON.stringify(CART),
    signal: AbortSignal.timeout(answerLimitMs),
  }).catch(() => undefined);
  if (!response) return { status: "none" as const, retryAfter: null, orderId: undefined };
  const body = (await response.json().catch(() => undefined)) as
    | { result?: { data?: { json?: { orderId?: number } } } }
    | undefined;
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    orderId: body?.result?.data?.json?.orderId,
  };
}

export interface Answer {
  /** When the answer came, in ms since the load started. */
  at: number;
  status: number | "none";
  /** How long it took, in ms. */
  ms: number;
  instance: string;
}

export interface Action {
  user: string;
  key: string;
  answers: Answer[];
  /** The order the final 200 named. */
  orderId: number | undefined;
}

export interface LoadOptions {
  instances: Instance[];
  /** Concurrent clients, each placing one order after another. */
  clients: number;
  /** A client gives up on one request after this long (and counts it as "none"). Default 60 s. */
  answerLimitMs?: number;
}

/** Statuses a client retries with the same key, as the idemkit link does. */
const RETRIED = (status: number | "none") => status === "none" || status === 409 || status >= 500;

/**
 * Starts the clients. Each action sends its key to the instances in turn (a load balancer's round robin) until
 * it is answered 200 or a status not worth retrying, waiting `Retry-After` (at most 1 s) or 200 ms in between.
 * `stop()` lets every action in flight finish (so none is left half done), then returns them all.
 */
export function startLoad({ instances, clients, answerLimitMs = 60_000 }: LoadOptions) {
  const startedAt = performance.now();
  const actions: Action[] = [];
  let stopping = false;
  let turn = 0;

  async function act(action: Action): Promise<void> {
    for (;;) {
      const instance = instances[turn++ % instances.length] as Instance;
      const sentAt = performance.now();
      const answer = await placeOrder(instance.base, action.user, action.key, answerLimitMs);
      const at = performance.now();
      action.answers.push({
        at: Math.round(at - startedAt),
        status: answer.status,
        ms: Math.round(at - sentAt),
        instance: instance.name,
      });
      if (!RETRIED(answer.status)) {
        action.orderId = answer.orderId;
        return;
      }
      const retryAfterMs = answer.retryAfter ? Number(answer.retryAfter) * 1000 : 200;
      await new Promise((resolve) => setTimeout(resolve, Math.min(retryAfterMs, 1_000)));
    }
  }

  async function client(): Promise<void> {
    while (!stopping) {
      const action: Action = {
        user: `chaos${globalThis.crypto.randomUUID().replaceAll("-", "")}`,
        key: globalThis.crypto.randomUUID(),
        answers: [],
        orderId: undefined,
      };
      actions.push(action);
      await act(action);
    }
  }

  const running = Array.from({ length: clients }, client);
  return {
    /** Ms since the load started: the time base of the answers. */
    elapsed: () => Math.round(performance.now() - startedAt),
    async stop(): Promise<Action[]> {
      stopping = true;
      await Promise.all(running);
      return actions;
    },
  };
}

export interface Verdict {
  actions: number;
  answers: number;
  byStatus: Record<string, number>;
  slowestMs: number;
  /** Actions charged more than once. */
  duplicates: number;
  /** Actions answered 200 whose order is not in the database. */
  lost: number;
  /** Actions that ended on something other than 200. */
  failed: number;
  /** Idempotency records still marked in progress. */
  inProgress: number;
  /** Per instance: ms from `since` to its first 200 (undefined if none came). */
  recoveryMs: Record<string, number | undefined>;
  /**
   * Per instance: requests sent to it from `since` on that were not answered 200, and when (ms after `since`) the
   * last of them was sent; from then on it served every request.
   */
  failedAfter: Record<string, { count: number; lastSentMs: number | undefined }>;
  /** Uncaught exceptions and unhandled rejections, all instances together. */
  uncaught: number;
}

/** Checks the actions against the database: exactly one order per action answered 200, and nothing else. */
export async function verdict(
  databaseUrl: string,
  actions: Action[],
  instances: Instance[],
  since = 0,
): Promise<Verdict> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ user_id: string; ids: number[] }[]>`
      select user_id, array_agg(id order by id) as ids from orders where user_id like 'chaos%' group by user_id`;
    const ordersOf = new Map(rows.map((row) => [row.user_id, row.ids]));
    const [held] = await sql<{ n: number }[]>`
      select count(*)::int as n from idempotency_keys where state = 'in_progress'`;
    const answers = actions.flatMap((action) => action.answers);
    const byStatus: Record<string, number> = {};
    for (const { status } of answers) byStatus[status] = (byStatus[status] ?? 0) + 1;
    const recoveryMs: Record<string, number | undefined> = {};
    const failedAfter: Verdict["failedAfter"] = {};
    for (const { name } of instances) {
      const first = answers
        .filter((answer) => answer.instance === name && answer.status === 200 && answer.at >= since)
        .reduce((earliest, answer) => Math.min(earliest, answer.at), Number.POSITIVE_INFINITY);
      recoveryMs[name] = Number.isFinite(first) ? first - since : undefined;
      const failedSent = answers
        .filter((answer) => answer.instance === name && answer.status !== 200 && answer.at - answer.ms >= since)
        .map((answer) => answer.at - answer.ms - since);
      failedAfter[name] = {
        count: failedSent.length,
        lastSentMs: failedSent.length > 0 ? Math.max(...failedSent) : undefined,
      };
    }
    return {
      actions: actions.length,
      answers: answers.length,
      byStatus,
      slowestMs: Math.max(0, ...answers.map((answer) => answer.ms)),
      duplicates: actions.filter((action) => (ordersOf.get(action.user)?.length ?? 0) > 1).length,
      lost: actions.filter(
        (action) => action.orderId !== undefined && !ordersOf.get(action.user)?.includes(action.orderId),
      ).length,
      failed: actions.filter((action) => action.answers.at(-1)?.status !== 200).length,
      inProgress: held?.n ?? 0,
      recoveryMs,
      failedAfter,
      uncaught: instances.reduce((sum, instance) => sum + instance.uncaught(), 0),
    };
  } finally {
    await sql.end();
  }
}
