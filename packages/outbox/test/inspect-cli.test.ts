/** `idemkit-outbox`, as an operator runs it against PostgreSQL: a separate process, DATABASE_URL, exit codes. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expectUnreachable, expectUsageError, openPostgres } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createOutbox, createRelay, outboxEventsTable } from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
const table = outboxEventsTable("cli_events");

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 2 });
  await database.query("create table cli_events (like outbox_events including all)");
  const outbox = createOutbox({ table });
  await database.db.transaction(async (tx) => {
    for (const key of ["a", "b", "c"]) {
      await outbox.enqueue({ tx }, { topic: key === "c" ? "mail.sent" : "order.placed", payload: { key }, key });
    }
  });
  const relay = createRelay({
    db: database.db,
    table,
    maxAttempts: 1,
    publish: (event) => {
      if ((event.payload as { key: string }).key !== "c") throw new Error("the broker is down");
    },
  });
  await relay.runOnce();
});
afterAll(() => database.close());

const CLI = fileURLToPath(new URL("../src/inspect-cli.ts", import.meta.url));
async function idemkitOutbox(args: string[], url = database.url) {
  const run = promisify(execFile)(
    process.execPath,
    // The test's table first, so that a test's own --table, given later, is the one read.
    ["--conditions=@idemkit/source", "--import", "tsx", CLI, "--table", "cli_events", ...args],
    { env: { ...process.env, DATABASE_URL: url } },
  );
  return run.then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

describe("idemkit-outbox", () => {
  it("lists the dead events with their last error, and the lag", async () => {
    const dead = JSON.parse((await idemkitOutbox(["dead", "--json"])).stdout);
    expect(dead.map((event: { key: string }) => event.key)).toEqual(["b", "a"]);
    expect(dead[0]).toMatchObject({ topic: "order.placed", attempts: 1, lastError: "Error: the broker is down" });
    expect(JSON.parse((await idemkitOutbox(["lag", "--json"])).stdout)).toMatchObject({
      pending: 0,
      dead: 2,
      publishedLastHour: 1,
    });
  });

  it("puts a dead event back to pending, says when there was none, and refuses a requeue without ids", async () => {
    const [newest] = JSON.parse((await idemkitOutbox(["dead", "--json"])).stdout) as Array<{ id: number }>;
    const requeued = await idemkitOutbox(["requeue", String(newest?.id), "--json"]);
    expect([requeued.code, JSON.parse(requeued.stdout)]).toEqual([0, { requeued: [newest?.id] }]);
    expect(await database.query("select key, state, attempts from cli_events where id = $1", [newest?.id])).toEqual([
      { key: "b", state: "pending", attempts: 0 },
    ]);
    expect((await idemkitOutbox(["requeue", String(newest?.id)])).code).toBe(3);
    const bare = await idemkitOutbox(["requeue"]);
    expect([bare.code, bare.stderr]).toEqual([2, expect.stringContaining("the ids of dead events, or --all")]);
  });

  it("reads and requeues the table its schema-qualified name names", async () => {
    const qualified = ["--table", "public.cli_events", "--json"];
    const [dead] = JSON.parse((await idemkitOutbox(["dead", ...qualified])).stdout) as Array<{ id: number }>;
    const requeued = await idemkitOutbox(["requeue", String(dead?.id), ...qualified]);
    expect([requeued.code, JSON.parse(requeued.stdout)]).toEqual([0, { requeued: [dead?.id] }]);
    expect(await database.query("select state from cli_events where id = $1", [dead?.id])).toEqual([
      { state: "pending" },
    ]);
  });

  it("refuses an unknown option, a wrong --limit and a wrong --table: exit 2, one line and the usage", async () => {
    const refusals = [
      [["lag", "--bogus"], "Unknown option '--bogus'"],
      [["dead", "--limit", "many"], "--limit must be a whole number, 1 or more"],
      [
        ["requeue", "--all", "--table", "public.cli_events.x"],
        '--table "public.cli_events.x" is not a table name: give NAME or SCHEMA.NAME, each of letters, digits and _',
      ],
    ] as const;
    for (const [args, said] of refusals) {
      expectUsageError(await idemkitOutbox([...args]), `idemkit-outbox: ${said}`);
    }
  });

  it("says in one line, without a stack, that it cannot reach the database, whichever command: exit 1", async () => {
    for (const args of [["lag"], ["requeue", "--all"]]) {
      const away = await idemkitOutbox(args, "postgres://127.0.0.1:1/x");
      expectUnreachable(away, /^idemkit-outbox: cannot reach the database at DATABASE_URL \(ECONNREFUSED/);
    }
  });

  it("prints its usage for --help, exit 0", async () => {
    const help = await idemkitOutbox(["--help"]);
    expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^usage: .*idemkit-outbox <command>/)]);
  });
});
