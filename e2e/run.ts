/**
 * `npm run e2e`: starts a throwaway PostgreSQL (or uses DATABASE_URL), gives the demo a database of its own on it
 * (and its confirmation worker) and a fresh PGlite folder, makes the T3 app (t3/prepare.ts) and a new Next.js app
 * (next-app/prepare.ts) on databases of their own, runs Playwright against all four, and cleans up. Extra arguments
 * go to `playwright test`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createDatabase, startPostgres } from "@idemkit/testkit";
import { prepareNextApp } from "./next-app/prepare.js";
import { prepareT3App } from "./t3/prepare.js";

const here = dirname(fileURLToPath(import.meta.url));
const playwright = createRequire(import.meta.url).resolve("@playwright/test/cli");

/** Undoes what was set up so far, last first, whatever failed on the way. */
const cleanups: Array<() => Promise<unknown>> = [];

/** Resolves with the child's exit code once it exited. */
function exited(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

let exitCode = 1;
try {
  const server = process.env.DATABASE_URL ? undefined : await startPostgres();
  if (server) cleanups.push(() => server.stop());
  const serverUrl = process.env.DATABASE_URL ?? server?.url ?? "";
  const database = await createDatabase(serverUrl, "idemkit_e2e");
  cleanups.push(() => database.drop());
  const pgliteDir = await mkdtemp(join(tmpdir(), "idemkit-e2e-pglite-"));
  cleanups.push(() => rm(pgliteDir, { recursive: true, force: true }));
  const t3Database = await createDatabase(serverUrl, "idemkit_e2e_t3");
  cleanups.push(() => t3Database.drop());
  const t3 = await prepareT3App(t3Database.url);
  cleanups.push(() => t3.remove());
  const versions = Object.entries(t3.versions).map(([name, version]) => `${name} ${version}`);
  console.log(`T3 app: create-t3-app 7.40.0 with ${versions.join(", ")}`);
  const nextAppDatabase = await createDatabase(serverUrl, "idemkit_e2e_next_app");
  cleanups.push(() => nextAppDatabase.drop());
  const nextApp = await prepareNextApp(nextAppDatabase.url);
  cleanups.push(() => nextApp.remove());
  const nextVersions = Object.entries(nextApp.versions).map(([name, version]) => `${name} ${version}`);
  console.log(`Next.js app: create-next-app 16.4.3 with ${nextVersions.join(", ")}`);

  // On PostgreSQL the demo sends order confirmations from a worker process of its own, as `npm run worker` does.
  const worker = spawn(
    process.execPath,
    ["--import", "tsx", join(here, "..", "apps", "web", "src", "server", "worker.ts")],
    { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, DATABASE_URL: database.url } },
  );
  const workerExited = exited(worker);
  cleanups.push(async () => {
    worker.kill("SIGTERM");
    await workerExited;
  });

  const tests = spawn(process.execPath, [playwright, "test", ...process.argv.slice(2)], {
    cwd: here,
    stdio: "inherit",
    env: {
      ...process.env,
      E2E_DATABASE_URL: database.url,
      E2E_PGLITE_DIR: pgliteDir,
      E2E_T3_APP: t3.dir,
      E2E_T3_DATABASE_URL: t3Database.url,
      E2E_NEXT_APP: nextApp.dir,
      E2E_NEXT_APP_DATABASE_URL: nextAppDatabase.url,
    },
  });
  exitCode = await exited(tests);
} catch (error) {
  console.error(error);
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
}
process.exit(exitCode);
