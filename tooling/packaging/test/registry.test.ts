/**
 * The release pipeline and the README's install commands, for real: every package is published with the
 * repository's own `changeset publish` to a throwaway local registry (Verdaccio, started here, passing everything
 * else through to the npm registry), then an app outside the workspace runs the install commands of the README and
 * the guides (the quickstarts', the Install section's and pg-boss's), word for word, against it and imports what they
 * installed.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { announcementsOf, shellLines } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readPages } from "./pages.js";

const execute = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const VERDACCIO = join(ROOT, "node_modules", "verdaccio", "bin", "verdaccio");
const CHANGESET = join(ROOT, "node_modules", "@changesets", "cli", "bin.js");
/** The packages `changeset publish` publishes: every workspace that is not private. */
const PUBLISHED = [
  "core",
  "command-line",
  "postgres-js-guard",
  "trpc",
  "drizzle",
  "outbox",
  "next",
  "react",
  "redis",
  "dynamodb",
  "pg-boss",
  "playwright",
];

/** Runs a command; a failure says what it printed. */
async function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
  try {
    const { stdout, stderr } = await execute(command, args, { ...options, timeout: 300_000, maxBuffer: 1 << 26 });
    return `${stdout}\n${stderr}`;
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(" ")} failed:\n${stdout}\n${stderr}`);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * The commands of the README and the guides that install idemkit by name (the README's Install section's, the
 * pg-boss guide's), as a user would copy them: each `npm install @idemkit/...` line of a shell block, its comment
 * dropped.
 */
async function installCommands(): Promise<string[][]> {
  return readPages()
    .flatMap(({ text }) => shellLines(text))
    .filter((line) => line.startsWith("npm install @idemkit/"))
    .map((line) => line.split(/\s+/));
}

let temp: string;
let registry: ChildProcess | undefined;
/** The environment every npm command here runs in: the local registry, and its login, instead of the user's. */
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  temp = await mkdtemp(join(tmpdir(), "idemkit-registry-"));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  await writeFile(
    join(temp, "config.yaml"),
    [
      `storage: ${join(temp, "storage")}`,
      "auth:",
      `  htpasswd: { file: ${join(temp, "htpasswd")}, max_users: 10 }`,
      "uplinks:",
      "  npmjs: { url: https://registry.npmjs.org/, timeout: 60s }",
      "packages:",
      // idemkit's own come only from here: never the public registry's, whatever it holds under the name.
      "  '@idemkit/*': { access: $all, publish: $authenticated }",
      "  '**': { access: $all, proxy: npmjs }",
      "log: { type: stdout, format: pretty, level: warn }",
      "",
    ].join("\n"),
  );
  const verdaccio = spawn(
    process.execPath,
    [VERDACCIO, "--config", join(temp, "config.yaml"), "--listen", `127.0.0.1:${port}`],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  registry = verdaccio;
  // Verdaccio says where it listens once it does (its log, at the warn level the config keeps).
  const listening = announcementsOf(verdaccio)("warn --- http address -");
  const exited = new Promise<never>((_, reject) => {
    verdaccio.once("exit", (code) => reject(new Error(`verdaccio exited (${code}) before it listened`)));
  });
  await Promise.race([listening, exited]);
  exited.catch(() => {});
  // The login `npm adduser` makes: a user on the registry, and its token.
  const login = await fetch(`${url}-/user/org.couchdb.user:release`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "release", password: globalThis.crypto.randomUUID() }),
  });
  const { token } = (await login.json()) as { token: string };
  const npmrc = join(temp, "npmrc");
  await writeFile(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${token}\naudit=false\nfund=false\n`);
  env = { ...process.env, npm_config_userconfig: npmrc, npm_config_registry: url };
}, 60_000);
afterAll(async () => {
  registry?.kill();
  await rm(temp, { recursive: true, force: true });
});

describe("the release pipeline and the Install section, on a local registry", () => {
  it("publishes every package with changeset publish", async () => {
    const printed = await run(process.execPath, [CHANGESET, "publish", "--no-git-tag"], { cwd: ROOT, env });
    for (const name of PUBLISHED) {
      const { version } = JSON.parse(await readFile(join(ROOT, "packages", name, "package.json"), "utf8"));
      const { stdout } = await execute("npm", ["view", `@idemkit/${name}`, "version"], { env });
      expect(stdout.trim(), `${name}: ${printed}`).toBe(version);
    }
  }, 300_000);

  it("installs the packages by name, exactly as the README says, and they load", async () => {
    const app = join(temp, "app");
    await mkdir(app);
    await writeFile(join(app, "package.json"), JSON.stringify({ name: "install-app", private: true, type: "module" }));
    const commands = await installCommands();
    expect(commands.length).toBeGreaterThan(0);
    for (const [command = "npm", ...args] of commands) await run(command, args, { cwd: app, env });

    const manifest = JSON.parse(await readFile(join(app, "package.json"), "utf8"));
    expect(Object.keys(manifest.dependencies).sort()).toEqual([
      "@aws-sdk/client-dynamodb",
      "@idemkit/core",
      "@idemkit/drizzle",
      "@idemkit/dynamodb",
      "@idemkit/next",
      "@idemkit/outbox",
      "@idemkit/pg-boss",
      "@idemkit/react",
      "@idemkit/redis",
      "@idemkit/trpc",
      "@tanstack/react-query",
      "@trpc/client",
      "@trpc/server",
      "@trpc/tanstack-react-query",
      "drizzle-orm",
      "pg-boss",
      "postgres",
      "redis",
      "zod",
    ]);
    const loaded = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        [
          'const trpc = await import("@idemkit/trpc");',
          'const client = await import("@idemkit/trpc/client");',
          'const drizzle = await import("@idemkit/drizzle");',
          'const react = await import("@idemkit/react");',
          'const jobs = await import("@idemkit/pg-boss");',
          'const outbox = await import("@idemkit/outbox");',
          'const next = await import("@idemkit/next");',
          'const nextClient = await import("@idemkit/next/client");',
          'const redis = await import("@idemkit/redis");',
          'const dynamodb = await import("@idemkit/dynamodb");',
          "console.log(JSON.stringify([typeof trpc.idempotency, typeof client.idempotencyLink,",
          "  typeof drizzle.drizzleStore, typeof react.useIdempotentMutation, typeof jobs.createJobs,",
          "  typeof outbox.createOutbox, typeof next.idempotentAction, typeof nextClient.useIdempotentActionState,",
          "  typeof redis.redisStore, typeof dynamodb.dynamoStore]));",
        ].join("\n"),
      ],
      { cwd: app, env },
    );
    expect(loaded).toContain(JSON.stringify(Array(10).fill("function")));
  }, 300_000);
});
