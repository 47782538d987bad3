/**
 * postgres.js with its defaults (`prepare` on) on a direct connection, where the app itself drops the prepared
 * statements (`DISCARD ALL`, as a connection reset does, or `DEALLOCATE ALL`): idemkit's next statement finds its
 * own missing, which behind a transaction pooler is the sign of one. Here it is not, and idemkit must not refuse
 * every call for good: it asks the pooler question again, and the calls after it run.
 */
import { createIdempotencyEngine, isIdempotencyError } from "@idemkit/core";
import type { Settlement } from "@idemkit/core/adapter";
import { createDatabase, MIGRATIONS_FOLDER } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { drizzleStore } from "../src/index.js";

let database: Awaited<ReturnType<typeof createDatabase>>;
let client: postgres.Sql;

beforeAll(async () => {
  database = await createDatabase(inject("postgresUrl"));
  client = postgres(database.url, { max: 2, onnotice: () => {} });
  await migrate(drizzle({ client }), { migrationsFolder: MIGRATIONS_FOLDER });
  await client.unsafe("create table notes (id serial primary key, key text not null)");
});
afterAll(async () => {
  await client?.end({ timeout: 5 });
  await database?.drop();
});

/** Drops every prepared statement on each of the pool's connections, as the app's own reset would. */
async function discardAllOnEveryConnection(): Promise<void> {
  const reserved = await Promise.all([client.reserve(), client.reserve()]);
  try {
    for (const connection of reserved) await connection.unsafe("discard all");
  } finally {
    for (const connection of reserved) connection.release();
  }
}

describe("an app's own DISCARD ALL on a direct connection", () => {
  it("fails only the calls that meet a statement missing, with nothing kept, and never refuses the calls after them", async () => {
    const db = drizzle({ client });
    const engine = createIdempotencyEngine({ store: drizzleStore({ db }), replayCacheSize: 0 });
    const note =
      (key: string) =>
      async ({ tx }: { tx: unknown }): Promise<Settlement<string>> => {
        await (tx as typeof db).execute(sql`insert into notes (key) values (${key})`);
        return { value: key, response: { status: 200, body: JSON.stringify(key) } };
      };
    const call = (key: string) =>
      engine.run({ scope: "s", path: "notes.add", key, fingerprint: "fp" }, note(key)).then(
        () => "ran",
        (error: unknown) => (isIdempotencyError(error) ? error.code : String(error)),
      );
    expect(await call("before")).toBe("ran");
    await discardAllOnEveryConnection();
    const keys = ["after-1", "after-2", "after-3", "after-4", "after-5", "after-6"];
    const outcomes: string[] = [];
    for (const key of keys) outcomes.push(await call(key));
    // A call that meets one of its statements missing fails as what it is (postgres.js prepares each again after),
    // a failure whose retry is safe; never a refusal of the calls after it.
    for (const outcome of outcomes) expect(["ran", "STORE_UNAVAILABLE", "OUTCOME_UNKNOWN"]).toContain(outcome);
    expect(outcomes.slice(-3)).toEqual(["ran", "ran", "ran"]);
    // Nothing of a call that failed was kept: a note exists exactly for each call that ran.
    const notes = await client.unsafe<{ key: string }[]>("select key from notes order by id");
    expect(notes.map((row) => row.key)).toEqual(["before", ...keys.filter((_, index) => outcomes[index] === "ran")]);
  });
});
