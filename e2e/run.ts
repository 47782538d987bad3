/**
 * `npm run e2e`: starts a throwaway PostgreSQL (or uses DATABASE_URL), gives the demo a database of its own on it
 * (and its confirmation worker) and a fresh PGlite folder, runs Playwright against both, and cleans up. Extra arguments go to `playwright test`.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createDatabase, startPostgres } from "@idemkit/testkit";

const here = dirname(fileURLToPath(import.meta.url));
const playwright = createRequire(import.meta.url).resolve("@playwright/test/cli");

const server = process.env.DATABASE_URL ? undefined : await startPostgres();
const database = await createDatabase(process.env.DATABASE_URL ?? server?.url ?? "", "idemkit_e2e");
const pgliteDir = await mkdtemp(join(tmpdir(), "idemkit-e2e-pglite-"));

// On PostgreSQL the demo sends order confirmations from a worker process of its own, as `npm run worker` does.
const worker = spawn(
  process.execPath,
  ["--import", "tsx", join(here, "..", "apps", "web", "src", "server", "worker.ts")],
  {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, DATABASE_URL: database.url },
  },
);

let exitCode = 1;
try {
  exitCode = await new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, [playwright, "test", ...process.argv.slice(2)], {
      cwd: here,
      stdio: "inherit",
      env: { ...process.env, E2E_DATABASE_URL: database.url, E2E_PGLITE_DIR: pgliteDir },
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
} finally {
  worker.kill("SIGTERM");
  const running = worker.exitCode === null && worker.signalCode === null;
  if (running) await new Promise((resolve) => worker.once("exit", resolve));
  await database.drop().catch(() => {});
  await server?.stop();
  await rm(pgliteDir, { recursive: true, force: true });
}
process.exit(exitCode);
