/**
 * A TypeScript script in a child process (through tsx, workspace packages from source), so a test can kill it
 * with SIGKILL at a moment the script announces: it prints `<PREFIX> <detail>` lines, which the test awaits.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export interface ScriptProcess {
  process: ChildProcess;
  /** Resolves with the rest of the next line the script prints that starts with `prefix` and a space. */
  next(prefix: string): Promise<string>;
  /** Sends SIGKILL, as a crash would, and waits for the process to be gone. */
  kill(): Promise<void>;
}

/**
 * What a child process announces on its stdout: `next(prefix)` resolves with the rest of the next line it prints
 * that starts with `prefix` and a space, so a test waits for the moment itself rather than for a while.
 */
export function announcementsOf(child: ChildProcess): (prefix: string) => Promise<string> {
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const waiting: Array<{ prefix: string; resolve: (rest: string) => void }> = [];
  lines.on("line", (line) => {
    const index = waiting.findIndex((waiter) => line.startsWith(`${waiter.prefix} `));
    if (index < 0) return;
    const [waiter] = waiting.splice(index, 1);
    waiter?.resolve(line.slice(waiter.prefix.length + 1));
  });
  return (prefix) => new Promise<string>((resolve) => waiting.push({ prefix, resolve }));
}

/** Starts `script` with `env` on top of this process's environment. */
export function spawnScript(script: URL, env: Record<string, string | undefined>): ScriptProcess {
  const child = spawn(process.execPath, ["--conditions=@idemkit/source", "--import", "tsx", fileURLToPath(script)], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    process: child,
    next: announcementsOf(child),
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Kills a server process as a crash would (SIGKILL), and waits until it is gone; nothing for one already gone. */
export async function killed(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = once(server, "exit");
  server.kill("SIGKILL");
  await exited;
}
