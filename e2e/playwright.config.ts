/**
 * The checkout demo (apps/web, production build) in Chromium, twice: on embedded PGlite (port 3100) and on
 * PostgreSQL (port 3101, when E2E_DATABASE_URL is set; `npm run e2e` starts a throwaway server and sets it).
 * Both servers run with IDEMKIT_FAULTS=1 so tests can arm the fault switches. When E2E_T3_APP names a built T3 app
 * (`npm run e2e` makes one, see t3/prepare.ts), its post forms are tested too (port 3102, the tests in t3/); when
 * E2E_NEXT_APP names a built create-next-app (next-app/prepare.ts), its checkout (port 3103, the tests in next-app/).
 */
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, devices, type PlaywrightTestConfig } from "@playwright/test";
import { chromiumLaunchOptions } from "./chromium.js";

const WEB = join(dirname(fileURLToPath(import.meta.url)), "..", "apps", "web");
const NEXT = join(WEB, "..", "..", "node_modules", "next", "dist", "bin", "next");

interface Target {
  name: string;
  port: number;
  env: Record<string, string>;
}

const targets: Target[] = [
  {
    name: "pglite",
    port: 3100,
    env: { IDEMKIT_PGLITE_DIR: process.env.E2E_PGLITE_DIR ?? join(tmpdir(), "idemkit-e2e-pglite") },
  },
];
if (process.env.E2E_DATABASE_URL) {
  targets.push({ name: "postgres", port: 3101, env: { DATABASE_URL: process.env.E2E_DATABASE_URL } });
}

type WebServer = Exclude<NonNullable<PlaywrightTestConfig["webServer"]>, unknown[]>;

const webServer: WebServer[] = targets.map(({ port, env }) => ({
  command: `node ${NEXT} start --port ${port}`,
  cwd: WEB,
  url: `http://127.0.0.1:${port}/api/trpc/checkout.products`,
  env: { ...env, IDEMKIT_FAULTS: "1", NEXT_TELEMETRY_DISABLED: "1" },
  reuseExistingServer: false,
  timeout: 60_000,
  stdout: "ignore",
  stderr: "pipe",
}));

const projects: PlaywrightTestConfig["projects"] = targets.map(({ name, port }) => ({
  name,
  testDir: "tests",
  use: { baseURL: `http://127.0.0.1:${port}` },
}));
const t3App = process.env.E2E_T3_APP;
if (t3App) {
  const T3_PORT = 3102;
  projects.push({ name: "t3", testDir: "t3", use: { baseURL: `http://127.0.0.1:${T3_PORT}` } });
  webServer.push({
    command: `node node_modules/next/dist/bin/next start --port ${T3_PORT}`,
    cwd: t3App,
    url: `http://127.0.0.1:${T3_PORT}/`,
    env: { NEXT_TELEMETRY_DISABLED: "1" },
    reuseExistingServer: false,
    timeout: 60_000,
    stdout: "ignore",
    stderr: "pipe",
  });
}

const nextApp = process.env.E2E_NEXT_APP;
if (nextApp) {
  const NEXT_APP_PORT = 3103;
  projects.push({ name: "next-app", testDir: "next-app", use: { baseURL: `http://127.0.0.1:${NEXT_APP_PORT}` } });
  webServer.push({
    command: `node node_modules/next/dist/bin/next start --port ${NEXT_APP_PORT}`,
    cwd: nextApp,
    url: `http://127.0.0.1:${NEXT_APP_PORT}/checkout`,
    env: { NEXT_TELEMETRY_DISABLED: "1" },
    reuseExistingServer: false,
    timeout: 60_000,
    stdout: "ignore",
    stderr: "pipe",
  });
}

export default defineConfig({
  fullyParallel: true,
  workers: 2,
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 10_000 },
  reporter: process.env.CI ? [["list"]] : [["list"], ["html", { open: "never" }]],
  use: {
    ...devices["Desktop Chrome"],
    launchOptions: chromiumLaunchOptions,
    trace: "retain-on-failure",
  },
  projects,
  webServer,
});
