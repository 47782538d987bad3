/**
 * Runs a fixture server in a child process (TypeScript through tsx, workspace packages from source), so a test
 * can kill it with SIGKILL mid-request. The child prints `LISTENING <url>` when it serves and `HOLDING <what>`
 * when a request reached the point where it stops.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export interface Child {
  process: ChildProcess;
  url: string;
  /** Resolves with what the next request that reached its hold point printed after `HOLDING `. */
  nextHold(): Promise<string>;
  /** Sends SIGKILL and waits for the process to be gone. */
  kill(): Promise<void>;
}

/** Starts `script` (a path relative to this folder) with `env` on top of this process's environment. */
export async function spawnChild(script: string, env: Record<string, string | undefined>): Promise<Child> {
  const child = spawn(
    process.execPath,
    ["--conditions=@idemkit/source", "--import", "tsx", fileURLToPath(new URL(script, import.meta.url))],
    { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const waiting: Array<{ prefix: string; resolve: (rest: string) => void }> = [];
  lines.on("line", (line) => {
    const index = waiting.findIndex((waiter) => line.startsWith(`${waiter.prefix} `));
    if (index < 0) return;
    const [waiter] = waiting.splice(index, 1);
    waiter?.resolve(line.slice(waiter.prefix.length + 1));
  });
  const next = (prefix: string) => new Promise<string>((resolve) => waiting.push({ prefix, resolve }));
  const url = await next("LISTENING");
  return {
    process: child,
    url,
    nextHold: () => next("HOLDING"),
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}
