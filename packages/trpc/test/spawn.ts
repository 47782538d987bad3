/**
 * Runs a fixture server in a child process, so a test can kill it with SIGKILL mid-request. The child prints
 * `LISTENING <url>` when it serves and `HOLDING <what>` when a request reached the point where it stops.
 */
import { type ScriptProcess, spawnScript } from "@idemkit/testkit";

export interface Child {
  process: ScriptProcess["process"];
  url: string;
  /** Resolves with what the next request that reached its hold point printed after `HOLDING `. */
  nextHold(): Promise<string>;
  /** Sends SIGKILL and waits for the process to be gone. */
  kill(): Promise<void>;
}

/** Starts `script` (a path relative to this folder) with `env` on top of this process's environment. */
export async function spawnChild(script: string, env: Record<string, string | undefined>): Promise<Child> {
  const child = spawnScript(new URL(script, import.meta.url), env);
  const url = await child.next("LISTENING");
  return { process: child.process, url, nextHold: () => child.next("HOLDING"), kill: child.kill };
}
