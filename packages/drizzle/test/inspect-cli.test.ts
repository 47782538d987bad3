/** `idemkit`, as an operator runs it against PostgreSQL: a separate process, DATABASE_URL, exit codes a script reads. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { encryptedStore } from "@idemkit/core";
import { expectUnreachable, expectUsageError, openPostgres } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { drizzleStore } from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
const now = Date.now();

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 2 });
  const store = drizzleStore({ db: database.db });
  const claim = (key: string, leaseMs: number) =>
    store.claim({
      id: { scope: "alice", path: "checkout.placeOrder", key },
      fingerprint: `fp-${key}`,
      now,
      leaseExpiresAt: now + leaseMs,
      expiresAt: now + 3_600_000,
    });
  const done = await claim("done", 60_000);
  if (done.status !== "claimed") throw new Error("the record was not claimed");
  const id = { scope: "alice", path: "checkout.placeOrder", key: "done" };
  await store.complete(id, done.fence, { status: 201, body: '{"orderId":7}' }, now + 3_600_000);
  await claim("running", 60_000);
  await claim("stuck", -1_000);
  const sealed = encryptedStore(store, { current: "k", keys: { k: new Uint8Array(32).fill(1) } });
  const secret = await sealed.claim({
    id: { scope: "bob", path: "account.update", key: "secret" },
    fingerprint: "fp",
    now,
    leaseExpiresAt: now + 60_000,
    expiresAt: now + 3_600_000,
  });
  if (secret.status !== "claimed") throw new Error("the record was not claimed");
  await sealed.complete(
    { scope: "bob", path: "account.update", key: "secret" },
    secret.fence,
    { status: 200, body: '{"card":"4242"}' },
    now + 3_600_000,
  );
});
afterAll(() => database.close());

const CLI = fileURLToPath(new URL("../src/inspect-cli.ts", import.meta.url));
async function idemkit(args: string[], url = database.url): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = promisify(execFile)(process.execPath, ["--conditions=@idemkit/source", "--import", "tsx", CLI, ...args], {
    env: { ...process.env, DATABASE_URL: url },
  });
  return run.then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

describe("idemkit on PostgreSQL", () => {
  it("shows a key's record: state, age, fence, fingerprint, status, and its answer only when asked", async () => {
    const shown = await idemkit(["show", "done", "--json"]);
    expect(shown.code).toBe(0);
    const [record] = JSON.parse(shown.stdout);
    expect(record).toMatchObject({
      scope: "alice",
      path: "checkout.placeOrder",
      key: "done",
      state: "completed",
      fingerprint: "fp-done",
      status: 201,
      fence: expect.any(Number),
      ageS: expect.any(Number),
    });
    expect(record.body).toBeUndefined();
    const withBody = JSON.parse((await idemkit(["show", "done", "--body", "--json"])).stdout);
    expect(withBody[0].body).toBe('{"orderId":7}');
    const sealed = JSON.parse((await idemkit(["show", "secret", "--body", "--json"])).stdout);
    expect(sealed[0].body).toBe("(sealed by encryptedStore)");
    expect((await idemkit(["show", "done"])).stdout).toMatch(/^state\s+completed$/m);
  });

  it("exits 3 for a key it has no record of", async () => {
    const missing = await idemkit(["show", "nothing"]);
    expect([missing.code, missing.stdout.trim()]).toEqual([3, "no record of key nothing"]);
  });

  it("lists the records in progress, and the stuck ones alone with --stuck", async () => {
    const running = JSON.parse((await idemkit(["list", "--json"])).stdout);
    expect(running.map((record: { key: string }) => record.key).sort()).toEqual(["running", "stuck"]);
    const stuck = await idemkit(["list", "--stuck"]);
    expect(stuck.stdout).toMatch(/checkout\.placeOrder {2}key stuck .*stuck: its lease ended/);
    expect(stuck.stdout).not.toContain("key running");
  });

  it("counts each path's records in a window, by how they ended", async () => {
    const { code, stdout } = await idemkit(["stats", "--since", "1h", "--json"]);
    expect(code).toBe(0);
    expect(JSON.parse(stdout).paths).toEqual([
      { path: "account.update", succeeded: 1, refused4xx: 0, failed5xx: 0, running: 0, stuck: 0 },
      { path: "checkout.placeOrder", succeeded: 1, refused4xx: 0, failed5xx: 0, running: 1, stuck: 1 },
    ]);
  });

  it("says what is wrong with a missing table and an unreachable database on one line, without a stack: exit 1", async () => {
    const noTable = await idemkit(["list", "--table", "nowhere"]);
    expect([noTable.code, noTable.stderr.trim().split("\n")]).toEqual([
      1,
      [
        'idemkit: relation "nowhere" does not exist in this database: run idemkit\'s migration, or name the table with --table',
      ],
    ]);
    const away = await idemkit(["list"], "postgres://127.0.0.1:1/x");
    expectUnreachable(away, /^idemkit: cannot reach the database at DATABASE_URL \(ECONNREFUSED/);
  });

  it("refuses a wrong command, none, an unknown option and a wrong --table: exit 2, one line and the usage", async () => {
    const refusals = [
      [["erase"], 'unknown command "erase"'],
      [[], "a command is needed: show, list, stats"],
      [["list", "--bogus"], "Unknown option '--bogus'"],
      [
        ["list", "--table", "a.b.c"],
        '--table "a.b.c" is not a table name: give NAME or SCHEMA.NAME, each of letters, digits and _',
      ],
      [["list", "--limit", "0"], "--limit must be a whole number, 1 or more"],
    ] as const;
    for (const [args, said] of refusals) {
      expectUsageError(await idemkit([...args]), `idemkit: ${said}`);
    }
  });

  it("prints its usage for --help, exit 0", async () => {
    const help = await idemkit(["--help"]);
    expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^usage: .*idemkit <command>/)]);
  });
});
