/** `idemkit-redis`, as an operator runs it: a separate process, REDIS_URL, exit codes a script reads. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { encryptedStore } from "@idemkit/core";
import { expectUnreachable, expectUsageError } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisStore } from "../src/index.js";
import { type ConnectedClient, connect, type RunningRedis, startRedis } from "./clients.js";

let redis: RunningRedis;
let connected: ConnectedClient;
const now = Date.now();

beforeAll(async () => {
  redis = await startRedis();
  connected = await connect("node-redis", redis.url);
  const store = redisStore({ client: connected.client });
  const claim = (key: string, leaseMs: number, on = store) =>
    on.claim({
      id: { scope: "alice", path: "checkout.placeOrder", key },
      fingerprint: `fp-${key}`,
      now,
      leaseExpiresAt: now + leaseMs,
      expiresAt: now + 3_600_000,
    });
  const done = await claim("done", 60_000);
  if (done.status !== "claimed") throw new Error("the record was not claimed");
  await store.complete(
    { scope: "alice", path: "checkout.placeOrder", key: "done" },
    done.fence,
    { status: 201, body: '{"orderId":7}' },
    now + 3_600_000,
  );
  await claim("running", 60_000);
  await claim("stuck", -1_000);
  const sealed = encryptedStore(store, { current: "k", keys: { k: new Uint8Array(32).fill(1) } });
  const secret = await claim("secret", 60_000, sealed);
  if (secret.status !== "claimed") throw new Error("the record was not claimed");
  await sealed.complete(
    { scope: "alice", path: "checkout.placeOrder", key: "secret" },
    secret.fence,
    { status: 200, body: '{"card":"4242"}' },
    now + 3_600_000,
  );
});
afterAll(async () => {
  await connected?.close();
  await redis?.stop();
});

const CLI = fileURLToPath(new URL("../src/inspect-cli.ts", import.meta.url));
async function idemkitRedis(args: string[], url = redis.url) {
  const run = promisify(execFile)(process.execPath, ["--conditions=@idemkit/source", "--import", "tsx", CLI, ...args], {
    env: { ...process.env, REDIS_URL: url },
  });
  return run.then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}
const on = ["--scope", "alice", "--path", "checkout.placeOrder"];

describe("idemkit-redis", () => {
  it("shows a key's record, and its answer only when asked (sealed ones said as such)", async () => {
    const shown = await idemkitRedis(["show", "done", ...on, "--json"]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      state: "completed",
      fence: expect.any(Number),
      fingerprint: "fp-done",
      status: 201,
      redisKey: expect.stringMatching(/^idemkit:\{[0-9a-f]{64}\}$/),
    });
    expect(JSON.parse((await idemkitRedis(["show", "done", ...on, "--body", "--json"])).stdout).body).toBe(
      '{"orderId":7}',
    );
    expect(JSON.parse((await idemkitRedis(["show", "secret", ...on, "--body", "--json"])).stdout).body).toBe(
      "(sealed by encryptedStore)",
    );
    const missing = await idemkitRedis(["show", "nothing", ...on]);
    expect([missing.code, missing.stdout.trim()]).toEqual([3, "no record of key nothing on checkout.placeOrder"]);
  });

  it("lists the records in progress, the stuck ones alone with --stuck, and counts them all", async () => {
    expect(JSON.parse((await idemkitRedis(["list", "--json"])).stdout)).toHaveLength(2);
    const stuck = JSON.parse((await idemkitRedis(["list", "--stuck", "--json"])).stdout);
    expect(stuck.map((record: { fingerprint: string }) => record.fingerprint)).toEqual(["fp-stuck"]);
    expect(JSON.parse((await idemkitRedis(["stats", "--json"])).stdout)).toEqual({
      succeeded: 2,
      refused4xx: 0,
      failed5xx: 0,
      running: 1,
      stuck: 1,
    });
  });

  it("reads records' state, never their answers, and list stops reading once it has --limit of them", async () => {
    const bulk = redisStore({ client: connected.client, prefix: "bulk:" });
    const id = (n: number) => ({ scope: "bob", path: "checkout.placeOrder", key: `k${n}` });
    for (let n = 0; n < 1_200; n++) {
      const claimed = await bulk.claim({
        id: id(n),
        fingerprint: "fp",
        now,
        leaseExpiresAt: now + 60_000,
        expiresAt: now + 3_600_000,
      });
      if (n % 2 === 0 && claimed.status === "claimed") {
        await bulk.complete(id(n), claimed.fence, { status: 200, body: "x".repeat(1_000) }, now + 3_600_000);
      }
    }
    const redisCommands = connected.client as unknown as {
      sendCommand(args: string[]): Promise<unknown>;
      info(section: string): Promise<string>;
    };
    const calls = async (command: string) => {
      const line = (await redisCommands.info("commandstats")).match(new RegExp(`cmdstat_${command}:calls=(\\d+)`));
      return Number(line?.[1] ?? 0);
    };
    await redisCommands.sendCommand(["CONFIG", "RESETSTAT"]);
    const listed = JSON.parse((await idemkitRedis(["list", "--limit", "1", "--prefix", "bulk:", "--json"])).stdout);
    expect(listed).toMatchObject([{ state: "in_progress" }]);
    const readForList = await calls("hmget");
    expect(readForList).toBeGreaterThan(0);
    expect(readForList).toBeLessThan(1_200);
    const stats = JSON.parse((await idemkitRedis(["stats", "--prefix", "bulk:", "--json"])).stdout);
    expect(stats).toMatchObject({ succeeded: 600, running: 600 });
    expect(await calls("hmget")).toBe(readForList + 1_200);
    expect(await calls("hgetall")).toBe(0);
  });

  it("says in one line, without a stack, that it cannot reach Redis: exit 1", async () => {
    const away = await idemkitRedis(["stats"], "redis://127.0.0.1:1");
    expectUnreachable(away, /^idemkit-redis: cannot reach Redis at REDIS_URL/);
  });

  it("refuses a show without its scope, an unknown option and no command: exit 2, one line and the usage", async () => {
    const refusals = [
      [["show", "done"], "show takes one key, with its --scope and --path"],
      [["stats", "--bogus"], "Unknown option '--bogus'"],
      [[], "a command is needed: show, list, stats"],
    ] as const;
    for (const [args, said] of refusals) {
      expectUsageError(await idemkitRedis([...args]), expect.stringContaining(`idemkit-redis: ${said}`));
    }
  });

  it("prints its usage for --help, exit 0", async () => {
    const help = await idemkitRedis(["--help"]);
    expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^usage: .*idemkit-redis <command>/)]);
  });
});
