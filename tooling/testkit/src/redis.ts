/**
 * A real Redis server for tests and benchmarks: the one at REDIS_URL when set, else a throwaway `redis-server`
 * (Debian's package: `.ci/run` installs it) on a free loopback port, without persistence unless asked, gone when
 * stopped.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { killed } from "./child.js";
import { freePort } from "./postgres.js";

const execFileAsync = promisify(execFile);

export interface RunningRedis {
  /** `redis://127.0.0.1:<port>`. */
  url: string;
  stop(): Promise<void>;
  /**
   * Kills the server as a crash would (SIGKILL: connections cut, and with no persistence every record lost).
   * Start it again with `restart()`. Absent for the server at REDIS_URL, which is not this process's to kill.
   */
  kill?(): Promise<void>;
  /** Starts a killed server again on the same port, empty. */
  restart?(): Promise<void>;
}

export interface StartRedisOptions {
  /**
   * Keep an append-only file, synced as Redis's `appendfsync` says (`everysec`: up to a second of writes lost in a
   * crash; `always`: none), as a benchmark against a durable database must. Tests leave it off.
   */
  appendfsync?: "everysec" | "always";
}

/** REDIS_URL when set; otherwise starts a throwaway server. */
export async function startRedis({ appendfsync }: StartRedisOptions = {}): Promise<RunningRedis> {
  const external = process.env.REDIS_URL;
  if (external) return { url: external, stop: async () => {} };
  const port = await freePort();
  const folder = appendfsync ? await mkdtemp(join(tmpdir(), "idemkit-redis-")) : undefined;
  const durability = folder ? ["--dir", folder, "--appendonly", "yes", "--appendfsync", String(appendfsync)] : [];
  let server = await launch(port, durability);
  const kill = () => killed(server);
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      await kill();
      if (folder) await rm(folder, { recursive: true, force: true });
    },
    kill,
    async restart() {
      await kill();
      server = await launch(port, durability);
    },
  };
}

async function launch(port: number, extra: string[] = []): Promise<ChildProcess> {
  const server = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--loglevel",
      "warning",
      // Later options win: a durable server's own --appendonly yes.
      ...extra,
    ],
    { stdio: ["ignore", "ignore", "ignore"] },
  );
  // A test that fails before its cleanup must not leave a server behind: it goes with this process.
  const orphaned = () => server.kill("SIGKILL");
  process.once("exit", orphaned);
  server.once("exit", () => process.off("exit", orphaned));
  const failed = new Promise<never>((_, reject) => {
    server.once("error", (error) =>
      reject(new Error(`redis-server could not start (${error.message}): apt-get install -y redis-server`)),
    );
    server.once("exit", (code) => reject(new Error(`redis-server exited with ${code} before it was ready`)));
  });
  failed.catch(() => {});
  // Asked until it answers: redis-server logs nothing at warning level once ready.
  for (let attempt = 0; attempt < 200; attempt++) {
    const answered = await Promise.race([ping(port), failed]);
    if (answered) return server;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  server.kill("SIGKILL");
  throw new Error(`redis-server on port ${port} did not answer within 5 s`);
}

/** Whether a Redis server answers PING on `port`, in one short connection. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.setTimeout(500, () => socket.destroy());
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (data) => {
      socket.destroy();
      resolve(data.toString().startsWith("+PONG"));
    });
    socket.once("error", () => resolve(false));
    socket.once("close", () => resolve(false));
  });
}

export interface RunningRedisCluster {
  /** One `redis://127.0.0.1:<port>` per master, for the clients' seed lists. */
  urls: string[];
  stop(): Promise<void>;
}

/**
 * A real Redis Cluster on loopback: `masters` redis-server processes in cluster mode (no replicas, no persistence),
 * their slots assigned by `redis-cli --cluster create`, ready once every node reports the cluster ok.
 */
export async function startRedisCluster(masters = 3): Promise<RunningRedisCluster> {
  const folder = await mkdtemp(join(tmpdir(), "idemkit-redis-cluster-"));
  const ports: number[] = [];
  const servers: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => killed(server)));
    await rm(folder, { recursive: true, force: true });
  };
  try {
    for (let index = 0; index < masters; index++) {
      const port = await freePort();
      ports.push(port);
      servers.push(
        await launch(port, [
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          join(folder, `nodes-${port}.conf`),
          "--cluster-node-timeout",
          "2000",
        ]),
      );
    }
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((port) => `127.0.0.1:${port}`),
      "--cluster-replicas",
      "0",
      "--cluster-yes",
    ]);
    for (let attempt = 0; ; attempt++) {
      const states = await Promise.all(ports.map((port) => run("redis-cli", ["-p", String(port), "cluster", "info"])));
      if (states.every((state) => state.includes("cluster_state:ok"))) break;
      if (attempt > 200) throw new Error("the Redis Cluster did not report ok within 10 s");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { urls: ports.map((port) => `redis://127.0.0.1:${port}`), stop };
}

async function run(command: string, args: string[]): Promise<string> {
  const { stdout } = await execFileAsync(command, args, { timeout: 30_000 });
  return stdout;
}
