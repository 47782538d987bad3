/** `idemkit-outbox-purge`, as cron would run it: a separate process, DATABASE_URL, batches. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { openPostgres } from "@idemkit/testkit";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { createOutbox, createRelay, processOnce } from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 2 });
});
afterAll(() => database.close());

it("deletes published outbox events and processed-event records past the ages it is given, and nothing else", async () => {
  const hoursAgo = (hours: number) => Date.now() - hours * 3_600_000;
  /** Enqueues an event as of `hours` ago and, unless it is to stay pending, publishes it then. */
  const eventAt = async (key: string, hours: number, publish: boolean) => {
    const now = () => hoursAgo(hours);
    await database.db.transaction((tx) => createOutbox({ now }).enqueue({ tx }, { topic: "t", payload: {}, key }));
    if (publish) await createRelay({ db: database.db, now, publish: () => {} }).runOnce();
  };
  await eventAt("old", 200, true);
  await eventAt("recent", 2, true);
  await eventAt("pending", 200, false);
  for (const [eventId, hours] of [
    ["old", 400],
    ["recent", 300],
  ] as const) {
    await processOnce({ db: database.db, consumer: "mailer", eventId, now: () => hoursAgo(hours) }, async () => {});
  }

  // Without an option, nothing is purged.
  await purge();
  expect(await database.query("select count(*)::int as n from outbox_events")).toEqual([{ n: 3 }]);

  const { stdout } = await purge("--published", "7d", "--processed", "14d");
  expect(stdout).toContain("deleted 1 published outbox event(s) older than 7d");
  expect(stdout).toContain("deleted 1 processed-event record(s) older than 14d");
  expect(await database.query("select key, state from outbox_events order by key")).toEqual([
    { key: "pending", state: "pending" },
    { key: "recent", state: "published" },
  ]);
  expect(await database.query("select event_id from processed_events")).toEqual([{ event_id: "recent" }]);
});

it("refuses an age it cannot read, deleting nothing", async () => {
  await expect(purge("--published", "7 days")).rejects.toMatchObject({ code: 2 });
});

const CLI = fileURLToPath(new URL("../src/purge-cli.ts", import.meta.url));
const purge = (...args: string[]) =>
  promisify(execFile)(process.execPath, ["--conditions=@idemkit/source", "--import", "tsx", CLI, ...args], {
    env: { ...process.env, DATABASE_URL: database.url },
  });
