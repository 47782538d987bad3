/** `idemkit-purge`, as cron would run it: a separate process, DATABASE_URL, batches. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { openPostgres } from "@idemkit/testkit";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { drizzleStore } from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 2 });
});
afterAll(() => database.close());

it("deletes expired records in batches and keeps live ones", async () => {
  const store = drizzleStore({ db: database.db });
  const now = Date.now();
  for (let i = 0; i < 5; i++) {
    const id = { scope: "cron", path: "p", key: `expired-${i}` };
    await store.claim({ id, fingerprint: "f", now: now - 10_000, leaseExpiresAt: now - 9_000, expiresAt: now - 1_000 });
  }
  const live = { scope: "cron", path: "p", key: "live" };
  await store.claim({ id: live, fingerprint: "f", now, leaseExpiresAt: now + 60_000, expiresAt: now + 60_000 });

  const { stdout } = await purge("--batch-size", "2");
  expect(stdout).toContain("deleted 5 expired record(s)");
  expect(await database.query("select key from idempotency_keys")).toEqual([{ key: "live" }]);
});

it("says where --outbox and --processed went, deleting nothing", async () => {
  const refused = await purge("--outbox", "7d").catch((error: { code: number; stderr: string }) => error);
  expect(refused).toMatchObject({
    code: 2,
    stderr: expect.stringContaining("--outbox moved to @idemkit/outbox: run `idemkit-outbox-purge --published 7d`"),
  });
});

it("refuses a batch size it cannot use, deleting nothing", async () => {
  await expect(purge("--batch-size", "0")).rejects.toMatchObject({ code: 2 });
});

const CLI = fileURLToPath(new URL("../src/purge-cli.ts", import.meta.url));
const purge = (...args: string[]) =>
  promisify(execFile)(process.execPath, ["--conditions=@idemkit/source", "--import", "tsx", CLI, ...args], {
    env: { ...process.env, DATABASE_URL: database.url },
  });
