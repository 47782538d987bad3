/** `idemkit-purge`, as cron would run it: a separate process, DATABASE_URL, batches, exit codes a script reads. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expectUnreachable, expectUsageError, openPostgres } from "@idemkit/testkit";
import { pgSchema } from "drizzle-orm/pg-core";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { drizzleStore, idempotencyKeysTable } from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 2 });
});
afterAll(() => database.close());

/** Claims `key` in `store` expiring `expiresInMs` from `now` (negative: already expired, its lease ended too). */
function claimed(store: ReturnType<typeof drizzleStore>, key: string, now: number, expiresInMs: number) {
  const id = { scope: "cron", path: "p", key };
  const leaseExpiresAt = Math.min(now + 60_000, now + expiresInMs);
  return store.claim({ id, fingerprint: "f", now: now - 10_000, leaseExpiresAt, expiresAt: now + expiresInMs });
}

it("deletes expired records in batches and keeps live ones", async () => {
  const store = drizzleStore({ db: database.db });
  const now = Date.now();
  for (let i = 0; i < 5; i++) await claimed(store, `expired-${i}`, now, -1_000);
  await claimed(store, "live", now, 60_000);

  const { code, stdout } = await purge(["--batch-size", "2"]);
  expect([code, stdout]).toEqual([0, expect.stringContaining("idemkit-purge: deleted 5 expired record(s)")]);
  expect(await database.query("select key from idempotency_keys")).toEqual([{ key: "live" }]);
});

it("purges a table of another name with --table, and that table alone", async () => {
  await database.query("create table other_keys (like idempotency_keys including all)");
  const now = Date.now();
  const other = drizzleStore({ db: database.db, table: idempotencyKeysTable("other_keys") });
  for (const key of ["expired-a", "expired-b"]) await claimed(other, key, now, -1_000);
  await claimed(other, "unexpired", now, 60_000);
  await claimed(drizzleStore({ db: database.db }), "expired-in-the-default-table", now, -1_000);

  const { code, stdout } = await purge(["--table", "other_keys", "--json"]);
  expect([code, JSON.parse(stdout)]).toEqual([0, { deleted: 2 }]);
  expect(await database.query("select key from other_keys")).toEqual([{ key: "unexpired" }]);
  expect(await database.query("select key from idempotency_keys where key like 'expired%'")).toEqual([
    { key: "expired-in-the-default-table" },
  ]);
});

it("purges the table its schema-qualified name names, public or not, and that table alone", async () => {
  await database.query("create schema archive");
  for (const table of ["public.cron_keys", "archive.cron_keys"]) {
    await database.query(`create table ${table} (like idempotency_keys including all)`);
  }
  const now = Date.now();
  const inPublic = drizzleStore({ db: database.db, table: idempotencyKeysTable("cron_keys") });
  const archived = drizzleStore({ db: database.db, table: idempotencyKeysTable("cron_keys", pgSchema("archive")) });
  for (const store of [inPublic, archived]) {
    for (const key of ["expired-a", "expired-b"]) await claimed(store, key, now, -1_000);
    await claimed(store, "unexpired", now, 60_000);
  }
  const keysIn = (table: string) => database.query(`select key from ${table} order by key`);

  const archive = await purge(["--table", "archive.cron_keys", "--json"]);
  expect([archive.code, JSON.parse(archive.stdout)]).toEqual([0, { deleted: 2 }]);
  expect(await keysIn("archive.cron_keys")).toEqual([{ key: "unexpired" }]);
  expect(await keysIn("public.cron_keys")).toEqual([{ key: "expired-a" }, { key: "expired-b" }, { key: "unexpired" }]);

  const publicOne = await purge(["--table", "public.cron_keys"]);
  expect([publicOne.code, publicOne.stdout]).toEqual([0, "idemkit-purge: deleted 2 expired record(s)\n"]);
  expect(await keysIn("public.cron_keys")).toEqual([{ key: "unexpired" }]);
});

it("refuses an unknown option, an operand and a name that is not a table's: exit 2, one line and the usage", async () => {
  const notATable = (name: string) =>
    [
      ["--table", name],
      `--table "${name}" is not a table name: give NAME or SCHEMA.NAME, each of letters, digits and _`,
    ] as const;
  const refusals = [
    [["--bogus"], "Unknown option '--bogus'"],
    [["now"], 'unexpected argument "now"'],
    notATable("keys; drop table idempotency_keys"),
    notATable("a.b.c"),
    notATable(".idempotency_keys"),
    notATable("public."),
    notATable(""),
    notATable('"idempotency_keys"'),
    notATable('public."idempotency_keys"'),
    // PostgreSQL would cut a 64-character name to 63 and find the table of that shorter name.
    notATable("k".repeat(64)),
  ] as const;
  await claimed(drizzleStore({ db: database.db }), "expired-but-refused", Date.now(), -1_000);
  for (const [args, said] of refusals) {
    expectUsageError(await purge([...args]), `idemkit-purge: ${said}`);
  }
  expect(await database.query("select key from idempotency_keys where key = 'expired-but-refused'")).toHaveLength(1);
});

it("says in one line, without a stack, that it cannot reach the database: exit 1", async () => {
  const away = await purge([], "postgres://127.0.0.1:1/x");
  expectUnreachable(away, /^idemkit-purge: cannot reach the database at DATABASE_URL \(ECONNREFUSED/);
});

it("says where --outbox and --processed went, deleting nothing", async () => {
  const refused = await purge(["--outbox", "7d"]);
  expect(refused).toMatchObject({
    code: 2,
    stderr: expect.stringContaining("--outbox moved to @idemkit/outbox: run `idemkit-outbox-purge --published 7d`"),
  });
});

it("refuses a batch size it cannot use, deleting nothing", async () => {
  const refused = await purge(["--batch-size", "0"]);
  expect([refused.code, refused.stderr]).toEqual([2, expect.stringContaining("--batch-size must be a whole number")]);
});

it("prints its usage for --help, exit 0", async () => {
  const help = await purge(["--help"]);
  expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^usage: .*idemkit-purge.*--table NAME/)]);
});

const CLI = fileURLToPath(new URL("../src/purge-cli.ts", import.meta.url));
function purge(args: string[], url = database.url): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = promisify(execFile)(process.execPath, ["--conditions=@idemkit/source", "--import", "tsx", CLI, ...args], {
    env: { ...process.env, DATABASE_URL: url },
  });
  return run.then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}
