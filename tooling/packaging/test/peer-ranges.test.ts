/**
 * Each end of the packages' peer ranges, as a user's app gets it: the tarballs and that end's versions of tRPC,
 * drizzle-orm and postgres.js installed with a plain `npm install` (from the npm registry, so its peer checks run),
 * then type-checked, a protected mutation run twice with one key, and the store and atomic-mode conformance suites
 * and the outbox's round run on PGlite and a real PostgreSQL; at the ends of pg-boss's range too (10.1 and 12, 12 on
 * the Node it needs), a job round on PostgreSQL; at the ends of `@idemkit/next`'s (next 15.5.0 with React 19.0, and
 * next 16's newest), a Server Action round on PostgreSQL. The versions between are what the rest of `npm test` runs
 * on.
 */
import { execFile } from "node:child_process";
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createDatabase, migrationStatementsFor } from "@idemkit/testkit";
import { afterAll, describe, expect, inject, it } from "vitest";

const execute = promisify(execFile);

/** Runs a command; a failure says what it printed (tsc reports its errors on stdout). */
async function run(...args: Parameters<typeof execute>): Promise<{ stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execute(...args);
    return { stdout: String(stdout), stderr: String(stderr) };
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`${args[0]} ${(args[1] as string[] | undefined)?.join(" ") ?? ""} failed:\n${stdout}\n${stderr}`);
  }
}
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const CONSUMER = fileURLToPath(new URL("../consumer/", import.meta.url));
const TSC = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const VITEST = join(ROOT, "node_modules", "vitest", "vitest.mjs");
/** The packages whose peer ranges every end is of; pg-boss's and next's join an end that names their peer. */
const PACKAGES = ["core", "command-line", "trpc", "drizzle", "outbox"] as const;

const ENDS = {
  oldest: {
    "@trpc/server": "11.19.0",
    "@trpc/client": "11.19.0",
    "drizzle-orm": "0.41.0",
    postgres: "3.4.0",
    "pg-boss": "10.1.0",
    // The first next with every API @idemkit/next imports (unstable_isUnrecognizedActionError came in 15.5.0).
    next: "15.5.0",
    react: "19.0.0",
    "react-dom": "19.0.0",
  },
  newest: {
    "@trpc/server": "11.25.2",
    "@trpc/client": "11.25.2",
    "drizzle-orm": "0.45.4",
    postgres: "4.2.0",
    "pg-boss": "12.38.1",
    next: "16.5.0",
    react: "19.3.1",
    "react-dom": "19.3.1",
  },
  "release candidate": {
    "@trpc/server": "11.25.2",
    "@trpc/client": "11.25.2",
    "drizzle-orm": "1.0.0-rc.5",
    // postgres.js 4: where idemkit begins its transactions through Drizzle's session (see drizzle's postgres-js.ts).
    postgres: "4.2.0",
  },
} as const;

/**
 * `npm run test:latest` names one end of its own, the newest published version of each peer (a JSON object of
 * versions): then only that end runs.
 */
const LATEST = process.env.IDEMKIT_PEER_VERSIONS;

/** The pg-boss module the job round imports for pg-boss 10 or 12 and later, and the Node it runs on (12: 22.12). */
function pgBossRound(version: string | undefined) {
  if (version === undefined) return undefined;
  return Number.parseInt(version, 10) >= 12
    ? { boss: "boss-12.ts", node: ["npx", "-y", "node@24"] }
    : { boss: "boss-10.ts", node: [process.execPath] };
}

const temps: string[] = [];
afterAll(async () => {
  for (const temp of temps) await rm(temp, { recursive: true, force: true });
});

const ends: Array<[string, Record<string, string>]> = LATEST ? [["latest", JSON.parse(LATEST)]] : Object.entries(ENDS);

describe.each(ends)("the %s end of the peer ranges", (_, versions) => {
  const pgBoss = pgBossRound(versions["pg-boss"]);
  const next = versions.next !== undefined;
  const packages = [...PACKAGES, ...(pgBoss ? ["pg-boss"] : []), ...(next ? ["next"] : [])];
  it("installs with a plain npm install, type-checks, replays a call, and keeps the store contract", async () => {
    const temp = await mkdtemp(join(tmpdir(), "idemkit-peers-"));
    temps.push(temp);
    const app = join(temp, "app");
    await mkdir(app, { recursive: true });
    const tarballs: Record<string, string> = {};
    for (const name of packages) {
      const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", temp], {
        cwd: join(ROOT, "packages", name),
      });
      const [packed] = JSON.parse(stdout) as Array<{ filename: string }>;
      tarballs[`@idemkit/${name}`] = `file:${join(temp, String(packed?.filename))}`;
    }
    await writeFile(
      join(app, "package.json"),
      JSON.stringify({
        name: "peer-range-app",
        private: true,
        type: "module",
        // core's tarball depends on the version published under the same number: the local one stands in for it.
        overrides: { "@idemkit/core": tarballs["@idemkit/core"] },
        dependencies: { ...tarballs, ...versions, "@electric-sql/pglite": "0.5.17" },
      }),
    );
    await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], { cwd: app, timeout: 240_000 });
    // The test tools are the workspace's: vitest runs the suites, and its types, Node's and React's check them.
    for (const name of ["vitest", "@types/node", ...(next ? ["@types/react", "@types/react-dom"] : [])]) {
      await mkdir(join(app, "node_modules", ...name.split("/").slice(0, -1)), { recursive: true });
      await symlink(join(ROOT, "node_modules", name), join(app, "node_modules", name), "dir");
    }
    await copyFile(join(CONSUMER, "app.ts"), join(app, "app.ts"));
    await copyFile(join(CONSUMER, "stores.conformance.ts"), join(app, "stores.conformance.ts"));
    if (pgBoss) {
      await copyFile(join(CONSUMER, "jobs.round.ts"), join(app, "jobs.round.ts"));
      await copyFile(join(CONSUMER, "pg-boss", pgBoss.boss), join(app, "boss.ts"));
    }
    if (next) await copyFile(join(CONSUMER, "actions.round.ts"), join(app, "actions.round.ts"));
    const tables = ["idempotency_keys", "outbox_events", "processed_events"].flatMap(migrationStatementsFor);
    await writeFile(join(app, "schema.sql"), [...new Set(tables)].join("\n"));
    await writeFile(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          lib: ["es2023", "dom"],
          types: ["node"],
          strict: true,
          skipLibCheck: true,
          outDir: "out",
        },
        files: [
          "app.ts",
          "stores.conformance.ts",
          ...(pgBoss ? ["jobs.round.ts"] : []),
          ...(next ? ["actions.round.ts"] : []),
        ],
      }),
    );
    await run(process.execPath, [TSC, "-p", "tsconfig.json"], { cwd: app });

    const { stdout } = await run(process.execPath, [join("out", "app.js")], { cwd: app });
    const seen = JSON.parse(stdout) as { runs: number; first: string; second: string; replayed: string | null };
    expect(seen).toMatchObject({ runs: 1, replayed: "true", second: seen.first });
    // tRPC's adapter keeps the error it read an unparseable body with: the middleware tells its refusal by it.
    expect(seen).toMatchObject({ garbled: 400, corrected: { status: 200, ran: true } });

    const database = await createDatabase(inject("postgresUrl"));
    try {
      await writeFile(
        join(app, "vitest.config.mjs"),
        "export default { test: { include: ['out/stores.conformance.js'], testTimeout: 30000 } };\n",
      );
      const suites = await run(process.execPath, [VITEST, "run", "--reporter=dot"], {
        cwd: app,
        env: { ...process.env, IDEMKIT_PEER_DATABASE_URL: database.url, NO_COLOR: "1", FORCE_COLOR: "0" },
        timeout: 240_000,
      });
      expect(`${suites.stdout}\n${suites.stderr}`).toMatch(/Tests\s+\d+ passed/);

      if (pgBoss) {
        const [node = "node", ...nodeArgs] = pgBoss.node;
        const round = await run(node, [...nodeArgs, join("out", "jobs.round.js")], {
          cwd: app,
          env: { ...process.env, IDEMKIT_PEER_DATABASE_URL: database.url },
          timeout: 120_000,
        });
        const jobs = JSON.parse(round.stdout.trim().split("\n").at(-1) ?? "") as Record<string, unknown>;
        const id = (jobs.first as { id: string }).id;
        expect(jobs).toEqual({
          first: { id, sent: true },
          again: { id, sent: false, reason: "exists", state: "created" },
          undoneSentLater: { id: expect.any(String), sent: true },
          resent: { id, sent: true },
          runs: 2,
          mailed: 1,
        });
      }
      if (next) {
        // A database of its own: the round makes its tables as a new app's migration would.
        const actionsDatabase = await createDatabase(inject("postgresUrl"));
        try {
          const round = await run(process.execPath, [join("out", "actions.round.js")], {
            cwd: app,
            env: { ...process.env, IDEMKIT_PEER_DATABASE_URL: actionsDatabase.url },
            timeout: 60_000,
          });
          const actions = JSON.parse(round.stdout.trim().split("\n").at(-1) ?? "") as { redirected: string[] };
          expect(actions).toEqual({
            first: { orderId: 1 },
            again: { orderId: 1 },
            redirected: [
              expect.stringMatching(/^NEXT_REDIRECT;(push|replace);\/orders\/2;307;$/),
              actions.redirected[0],
            ],
            notFound: ["NEXT_HTTP_ERROR_FALLBACK;404", "NEXT_HTTP_ERROR_FALLBACK;404"],
            // The order, and the redirected one; the one that ended in notFound() was rolled back.
            orders: 2,
            keyField: expect.stringMatching(/was called outside a request scope/),
            form: expect.stringContaining("Place order</button>"),
          });
        } finally {
          await actionsDatabase.drop();
        }
      }
    } finally {
      await database.drop();
    }
  }, 600_000);
});
