/**
 * The built demo as a process, against a PostgreSQL server that the test takes away and brings back: an instance
 * that starts while the database is down answers 503 and says it is not ready, then, once the database is up, becomes
 * ready, migrates and places orders, with no restart. Needs the build (`npm test` builds first).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { createDatabase, type RunningPostgres, startPostgres } from "@idemkit/testkit";
import superjson from "superjson";
import { afterAll, beforeAll, expect, it } from "vitest";

const APP_DIR = fileURLToPath(new URL("..", import.meta.url));
const NEXT = fileURLToPath(new URL("../../../node_modules/next/dist/bin/next", import.meta.url));

let postgres: RunningPostgres;
let app: ChildProcess | undefined;
/** Whether the test left the server halted (it failed halfway): stop() needs it running. */
let halted = false;

beforeAll(async () => {
  if (!existsSync(`${APP_DIR}/.next/BUILD_ID`)) throw new Error("apps/web is not built: npm run build");
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  app?.kill("SIGKILL");
  if (halted) await postgres.resume?.();
  await postgres?.stop();
});

/** How often a starting process is asked again: it gives no other signal that it is ready. */
const POLL_INTERVAL_MS = 200;

/** Asks until `url` answers with `status` (the app or its database may still be starting); gives up after 60 s. */
async function answered(url: string, status: number, init?: RequestInit): Promise<Response> {
  let last = "no answer";
  for (const startedAt = Date.now(); Date.now() - startedAt < 60_000; ) {
    const response = await fetch(url, init).catch(() => undefined);
    if (response?.status === status) return response;
    last = response ? `${response.status} ${await response.text()}` : "no answer";
    await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
  }
  throw new Error(`${url} never answered ${status}; last: ${last}`);
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

it.skipIf(process.env.DATABASE_URL)(
  "starts while PostgreSQL is down, answers 503 meanwhile, and serves once it is back, with no restart",
  async () => {
    const { url } = await createDatabase(postgres.url);
    await postgres.halt?.();
    halted = true;
    const port = await freePort();
    app = spawn(process.execPath, [NEXT, "start", "-p", String(port)], {
      cwd: APP_DIR,
      env: { ...process.env, DATABASE_URL: url, PORT: String(port), NEXT_TELEMETRY_DISABLED: "1" },
      stdio: "ignore",
    });
    const base = `http://127.0.0.1:${port}`;
    const order = () =>
      fetch(`${base}/api/trpc/checkout.placeOrder`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie: "uid=outage", "idempotency-key": "outage-order-1" },
        body: JSON.stringify(superjson.serialize({ items: [{ sku: "tea", qty: 1 }] })),
      });

    expect(await (await answered(`${base}/api/health`, 503)).json()).toEqual({ status: "unavailable" });
    expect((await order()).status).toBe(503);

    await postgres.resume?.();
    halted = false;
    expect(await (await answered(`${base}/api/health`, 200)).json()).toEqual({ status: "ready" });
    const placed = await order();
    expect(placed.status).toBe(200);
    const again = await order();
    expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(await again.text()).toBe(await placed.text());
  },
  120_000,
);
