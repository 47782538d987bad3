/**
 * A real DynamoDB API for tests and benchmarks: the endpoint at DYNAMODB_ENDPOINT when set (DynamoDB Local, or
 * AWS itself with the environment's credentials), else a throwaway `dynalite` (DynamoDB's API in Node.js, in
 * memory) in a child process on a free loopback port, so a test can stop it answering as a hung server would.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createInterface } from "node:readline";
import { killed } from "./child.js";
import { freePort } from "./postgres.js";

export interface RunningDynamo {
  /** The endpoint to give `new DynamoDBClient({ endpoint })`, e.g. `http://127.0.0.1:41235`. */
  endpoint: string;
  stop(): Promise<void>;
  /**
   * Freezes the server (SIGSTOP): connections stay open and nothing answers, as a server that hangs. `resume()`
   * thaws it. Absent for the endpoint at DYNAMODB_ENDPOINT.
   */
  pause?(): void;
  resume?(): void;
}

/** DYNAMODB_ENDPOINT when set; otherwise starts a throwaway dynalite. */
export async function startDynamo(): Promise<RunningDynamo> {
  const external = process.env.DYNAMODB_ENDPOINT;
  if (external) return { endpoint: external, stop: async () => {} };
  const cli = createRequire(import.meta.url).resolve("dynalite/cli.js");
  // Its CLI takes port 0 for its default, 4567: a free one is found here.
  const port = await freePort();
  const server = spawn(
    process.execPath,
    [
      cli,
      "--port",
      String(port),
      "--host",
      "127.0.0.1",
      "--createTableMs",
      "0",
      "--deleteTableMs",
      "0",
      "--updateTableMs",
      "0",
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  // A test that fails before its cleanup must not leave a server behind: it goes with this process.
  const orphaned = () => server.kill("SIGKILL");
  process.once("exit", orphaned);
  server.once("exit", () => process.off("exit", orphaned));
  await listening(server);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () => killed(server),
    pause: () => void server.kill("SIGSTOP"),
    resume: () => void server.kill("SIGCONT"),
  };
}

/** Resolves once dynalite says it listens. */
function listening(server: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: server.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => {
      if (line.includes("listening at")) resolve();
    });
    server.once("error", (error) => reject(new Error(`dynalite could not start: ${error.message}`)));
    server.once("exit", (code) => reject(new Error(`dynalite exited with ${code} before it listened`)));
  });
}
