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

  const cli = fileURLToPath(new URL("../src/purge-cli.ts", import.meta.url));
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--conditions=@idemkit/source", "--import", "tsx", cli, "--batch-size", "2"],
    { env: { ...process.env, DATABASE_URL: database.url } },
  );
  expect(stdout).toContain("deleted 5 expired record(s)");
  expect(await database.query("select key from idempotency_keys")).toEqual([{ key: "live" }]);
});
