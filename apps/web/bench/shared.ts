/**
 * What the bench scripts share: bench/server.ts started as a child process, one POST to it read for what the
 * scripts count, and the latency table they print.
 */
import { spawn } from "node:child_process";
import { type Agent, request } from "node:http";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { IDEMPOTENT_REPLAYED_HEADER } from "@idemkit/core";
import { parseRetryAfterMs } from "@idemkit/core/client";

const SERVER = fileURLToPath(new URL("./server.ts", import.meta.url));

export interface BenchServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Ends the process with SIGTERM (so its pool closes) and waits for its exit. */
  stop(): Promise<void>;
}

/**
 * Starts bench/server.ts against `databaseUrl` and waits for its `LISTENING` line. BENCH_SERVER_ARGS go to its node
 * (`--cpu-prof --cpu-prof-dir=prof` to see where its time goes). `checkout`: another built checkout of this
 * repository, whose bench server (and so whose packages) to start instead of this one's. `env`: more of its
 * environment (BENCH_PREPARE=false, BENCH_POOL).
 */
export async function startBenchServer(
  databaseUrl: string,
  checkout?: string,
  env: Record<string, string> = {},
): Promise<BenchServer> {
  const nodeArgs = process.env.BENCH_SERVER_ARGS?.split(" ").filter(Boolean) ?? [];
  const server = checkout ? join(checkout, "apps/web/bench/server.ts") : SERVER;
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", server], {
    // Where `--import tsx` is resolved from (the checkout's own node_modules): its apps/web, as npm runs this one.
    cwd: checkout && join(checkout, "apps/web"),
    // As `next start` runs it: development-only checks (such as idemkit's bypass warning) are off.
    env: { ...process.env, ...env, DATABASE_URL: databaseUrl, NODE_ENV: "production" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on("line", (line) => {
      if (line.startsWith("LISTENING ")) resolve(line.slice("LISTENING ".length));
    });
    child.once("exit", (code) => reject(new Error(`bench/server.ts exited (${code}) before listening`)));
  });
  return {
    url,
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

export interface PostOptions {
  agent: Agent;
  /** The demo's user: the `uid` cookie. */
  user: string;
  /** The Idempotency-Key header; none for unprotected procedures. */
  key?: string | undefined;
  /** The request body, tRPC's JSON (`{"json": input}` with superjson). */
  body: string;
}

export interface Answer {
  status: number;
  /** Whether idemkit answered from a stored result (its replay header). */
  replayed: boolean;
  /** Retry-After in ms, when the server sent one. */
  retryAfterMs: number | undefined;
  body: string;
}

/** POSTs to `url`, the full address of a procedure (`<server url>/api/trpc/checkout.placeOrder`). */
export function post(url: string, { agent, user, key, body }: PostOptions): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { "content-type": "application/json", cookie: `uid=${user}` };
    if (key) headers["idempotency-key"] = key;
    const call = request(url, { method: "POST", agent, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        resolve({
          status: response.statusCode ?? 0,
          replayed: response.headers[IDEMPOTENT_REPLAYED_HEADER.toLowerCase()] === "true",
          retryAfterMs: parseRetryAfterMs(response.headers["retry-after"], Date.now()),
          body: Buffer.concat(chunks).toString(),
        });
      });
    });
    call.on("error", reject);
    call.end(body);
  });
}

/** The `p`th percentile of ascending `sorted`; NaN when it is empty. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** Prints `rows` under `columns`, each column as wide as its widest cell; the first is left-aligned, numbers right. */
export function printTable(columns: string[], rows: string[][]): void {
  const widths = columns.map((column, i) => Math.max(column.length, ...rows.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("   ")
      .trimEnd();
  console.log(line(columns));
  for (const row of rows) console.log(line(row));
}
