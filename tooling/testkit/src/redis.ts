/**
 * A real Redis server for tests and benchmarks: the one at REDIS_URL when set, else a throwaway `redis-server`
 * (Debian's package: `.ci/run` installs it) on a free loopback port, with no persistence, gone when stopped.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { freePort } from "./postgres.js";

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

/** REDIS_URL when set; otherwise starts a throwaway server. */
export async function startRedis(): Promise<RunningRedis> {
  const external = process.env.REDIS_URL;
  if (external) return { url: external, stop: async () => {} };
  const port = await freePort();
  let server = await launch(port);
  const kill = async () => {
    if (server.exitCode !== null || server.signalCode !== null) return;
    const exited = once(server, "exit");
    server.kill("SIGKILL");
    await exited;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: kill,
    kill,
    async restart() {
      await kill();
      server = await launch(port);
    },
  };
}

async function launch(port: number): Promise<ChildProcess> {
  const server = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
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
