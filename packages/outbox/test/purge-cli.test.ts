/** `idemkit-outbox-purge`, as cron would run it: a separate process, DATABASE_URL, batches, exit codes. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expectUnreachable, expectUsageError, openPostgres } from "@idemkit/testkit";
import { pgSchema } from "drizzle-orm/pg-core";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import {
  createOutbox,
  createRelay,
  type OutboxEventsTable,
  outboxEventsTable,
  type ProcessedEventsTable,
  processedEventsTable,
  processOnce,
} from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 2 });
});
afterAll(() => database.close());

const hoursAgo = (hours: number) => Date.now() - hours * 3_600_000;

/** Enqueues an event in `table` as of `hours` ago and, unless it is to stay pending, publishes it then. */
async function eventAt(key: string, hours: number, publish: boolean, table?: OutboxEventsTable) {
  const now = () => hoursAgo(hours);
  const where = table ? { table } : {};
  await database.db.transaction((tx) =>
    createOutbox({ now, ...where }).enqueue({ tx }, { topic: "t", payload: {}, key }),
  );
  if (publish) await createRelay({ db: database.db, now, publish: () => {}, ...where }).runOnce();
}

/** Records in `table` that the consumer "mailer" processed `eventId`, `hours` ago. */
async function processedAt(eventId: string, hours: number, table?: ProcessedEventsTable) {
  const now = () => hoursAgo(hours);
  await processOnce({ db: database.db, consumer: "mailer", eventId, now, ...(table && { table }) }, async () => {});
}

it("deletes published outbox events and processed-event records past the ages it is given, and nothing else", async () => {
  await eventAt("old", 200, true);
  await eventAt("recent", 2, true);
  await eventAt("pending", 200, false);
  await processedAt("old", 400);
  await processedAt("recent", 300);

  // Without an age, nothing could be purged: a usage error, so that a cron line with a typo never passes for one.
  expect(await purge([])).toMatchObject({ code: 2, stderr: expect.stringContaining("give --published AGE") });
  expect(await database.query("select count(*)::int as n from outbox_events")).toEqual([{ n: 3 }]);

  const { stdout } = await purge(["--published", "7d", "--processed", "14d"]);
  expect(stdout).toContain("deleted 1 published outbox event(s) older than 7d");
  expect(stdout).toContain("deleted 1 processed-event record(s) older than 14d");
  expect(await database.query("select key, state from outbox_events order by key")).toEqual([
    { key: "pending", state: "pending" },
    { key: "recent", state: "published" },
  ]);
  expect(await database.query("select event_id from processed_events")).toEqual([{ event_id: "recent" }]);
});

it("purges tables of other names, in another schema, with --table and --processed-table", async () => {
  await database.query("create schema archive");
  await database.query("create table archive.events (like outbox_events including all)");
  await database.query("create table archive.processed (like processed_events including all)");
  const archive = pgSchema("archive");
  const events = outboxEventsTable("events", archive);
  const processed = processedEventsTable("processed", archive);
  await eventAt("archived-old", 200, true, events);
  await eventAt("archived-recent", 2, true, events);
  await processedAt("archived-old", 400, processed);
  await processedAt("archived-recent", 2, processed);
  await eventAt("default-old", 200, true);

  const tables = ["--table", "archive.events", "--processed-table", "archive.processed"];
  const { code, stdout } = await purge([...tables, "--published", "7d", "--processed", "14d", "--json"]);
  expect([code, JSON.parse(stdout)]).toEqual([0, { publishedEvents: 1, processedEvents: 1 }]);
  expect(await database.query("select key from archive.events")).toEqual([{ key: "archived-recent" }]);
  expect(await database.query("select event_id from archive.processed")).toEqual([{ event_id: "archived-recent" }]);
  expect(await database.query("select key from outbox_events where key = 'default-old'")).toEqual([
    { key: "default-old" },
  ]);
});

it("refuses an unknown option, an age it cannot read and a name that is not a table's: exit 2, one line and the usage", async () => {
  const refusals = [
    [["--bogus"], "Unknown option '--bogus'"],
    [["--published", "7 days"], '--published "7 days" is not an age such as 30m, 1h or 7d'],
    [
      ["--processed-table", "x y", "--processed", "1d"],
      '--processed-table "x y" is not a table name: give NAME or SCHEMA.NAME, each of letters, digits and _',
    ],
  ] as const;
  for (const [args, said] of refusals) {
    expectUsageError(await purge([...args]), `idemkit-outbox-purge: ${said}`);
  }
});

it("says in one line, without a stack, that it cannot reach the database: exit 1", async () => {
  const away = await purge(["--published", "7d"], "postgres://127.0.0.1:1/x");
  expectUnreachable(away, /^idemkit-outbox-purge: cannot reach the database at DATABASE_URL \(ECONNREFUSED/);
});

it("prints its usage for --help, exit 0", async () => {
  const help = await purge(["--help"]);
  expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^usage: .*idemkit-outbox-purge.*--table NAME/s)]);
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
