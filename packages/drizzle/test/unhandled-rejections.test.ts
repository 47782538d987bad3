/**
 * No statement idemkit sends, or refuses, ever rejects unhandled, on postgres.js, node-postgres and PGlite: an
 * unhandled rejection ends a plain Node process.
 *
 * A claim that fails before the savepoint sent behind it, through the engine. In atomic mode the SAVEPOINT is sent
 * right behind the claim without waiting for it (that saves a round trip), so when the claim fails the savepoint
 * fails too, in an aborted transaction, and on postgres.js it can fail first: a prepared statement the server will
 * not run as cached (a migration changed a column's type under it, or a transaction pooler lost it) is sent again by
 * postgres.js behind the savepoint, whose failure then comes back while the claim is still pending. Each such test
 * asserts that the call is refused with idemkit's error and nothing ran, that no `unhandledRejection` was emitted
 * while a few macrotasks passed after it, and that the next call, once the cause is gone, works. Each database has
 * one connection, so the failing call goes through the connection that prepared the claim.
 *
 * And a statement the procedure makes through its transaction once that is over, held without being awaited: the
 * fence refuses it with a promise of its own, which must not reject unhandled either.
 */

import { createIdempotencyEngine, IdempotencyErrorCode, isIdempotencyError } from "@idemkit/core";
import type { Execution } from "@idemkit/core/adapter";
import { type OpenedDatabase, openNodePostgres, openPglite, openPostgres, type PgliteDatabase } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { pgTable, serial, text } from "drizzle-orm/pg-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import {
  drizzleStore,
  type IdempotencyKeysTable,
  idempotencyKeys,
  idempotencyKeysTable,
  type TransactionOf,
} from "../src/index.js";

type Db = PgliteDatabase;
const notesTable = pgTable("notes", { id: serial("id").primaryKey(), key: text("key").notNull() });
let server: OpenedDatabase<unknown>;
let nodePostgres: OpenedDatabase<unknown>;
let pglite: OpenedDatabase<unknown>;

beforeAll(async () => {
  [server, nodePostgres, pglite] = await Promise.all([
    openPostgres(inject("postgresUrl"), { max: 1 }),
    openNodePostgres(inject("postgresUrl"), { max: 1 }),
    openPglite(),
  ]);
  for (const database of [server, nodePostgres, pglite]) {
    await database.query("create table notes (id serial primary key, key text not null)");
  }
});
afterAll(async () => {
  await Promise.all([server?.close(), nodePostgres?.close(), pglite?.close()]);
});

/** Each driver, with its database (opened before the tests run). */
const ALL_DRIVERS = [
  ["postgres.js", () => server],
  ["node-postgres", () => nodePostgres],
  ["PGlite", () => pglite],
] as const;

/** The rejections nothing handled while a test ran, as `process` reported them. */
let unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => void unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

/** Lets a few macrotasks pass: whatever the driver answers late has come back, and Node has reported it. */
async function macrotasksPass(): Promise<void> {
  for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** A call through the engine whose procedure writes a note under its key; `runs` counts the procedure's runs. */
function caller(db: Db, table: IdempotencyKeysTable = idempotencyKeys) {
  const engine = createIdempotencyEngine({ store: drizzleStore({ db, table }) });
  let runs = 0;
  return {
    get runs() {
      return runs;
    },
    call(key: string) {
      const request = { scope: "s", path: "notes.add", key, fingerprint: "fp" };
      return engine.run(request, async ({ tx }: Execution<unknown>) => {
        runs++;
        await (tx as Db).execute(sql`insert into notes (key) values (${key})`);
        return { value: "added", response: { status: 200, body: '"added"' } };
      });
    },
  };
}

const added = { replayed: false, value: "added" };

describe.each([
  ["postgres.js", () => server],
  ["node-postgres", () => nodePostgres],
] as const)("a column's type changed under the prepared claim, on %s", (driver, database) => {
  it("refuses the call with STORE_UNAVAILABLE, nothing run or rejected unhandled, and the next call works", async () => {
    const { db, query } = database();
    const notes = caller(db as Db);
    const key = (step: string) => `retyped-${driver}-${step}`;
    // Prepares the claim on the only connection, with `state` as text.
    expect(await notes.call(key("before"))).toEqual(added);

    // A migration while the app is live: the cached claim's result type changes.
    await query("alter table idempotency_keys alter column state type varchar(16)");
    const refused = await notes.call(key("during")).catch((error: unknown) => error);
    await macrotasksPass();
    expect(unhandled).toEqual([]);
    expect(isIdempotencyError(refused)).toBe(true);
    expect(refused).toMatchObject({ code: IdempotencyErrorCode.STORE_UNAVAILABLE });
    expect(notes.runs).toBe(1);
    expect(await query("select key from notes where key = $1", [key("during")])).toHaveLength(0);
    expect(await query("select key from idempotency_keys where key = $1", [key("during")])).toHaveLength(0);

    // Put back as it was: the next call on the same connection claims, runs and commits.
    await query("alter table idempotency_keys alter column state type text");
    expect(await notes.call(key("after"))).toEqual(added);
    expect(notes.runs).toBe(2);
    expect(await query("select key from notes where key = $1", [key("after")])).toHaveLength(1);
    await macrotasksPass();
    expect(unhandled).toEqual([]);
  });
});

describe.each(ALL_DRIVERS)("a table without a column the claim reads, on %s", (driver, database) => {
  it("refuses the call with STORE_MISCONFIGURED, nothing run or rejected unhandled, and the next call works", async () => {
    const { db, query } = database();
    const name = `keys_${driver.replaceAll(/[^a-z]/g, "_")}`;
    await query(`create table ${name} (like idempotency_keys including all)`);
    await query(`alter table ${name} drop column response_body`);
    const notes = caller(db as Db, idempotencyKeysTable(name));
    const key = (step: string) => `missing-${driver}-${step}`;

    const refused = await notes.call(key("during")).catch((error: unknown) => error);
    await macrotasksPass();
    expect(unhandled).toEqual([]);
    expect(isIdempotencyError(refused)).toBe(true);
    expect(refused).toMatchObject({ code: IdempotencyErrorCode.STORE_MISCONFIGURED });
    expect(notes.runs).toBe(0);
    expect(await query("select key from notes where key = $1", [key("during")])).toHaveLength(0);
    expect(await query(`select key from ${name}`)).toHaveLength(0);

    // The operator applies the missing migration: the next call claims, runs and commits.
    await query(`alter table ${name} add column response_body text`);
    expect(await notes.call(key("after"))).toEqual(added);
    expect(notes.runs).toBe(1);
    expect(await query("select key from notes where key = $1", [key("after")])).toHaveLength(1);
    expect(await query(`select key, state from ${name}`)).toEqual([{ key: key("after"), state: "completed" }]);
    await macrotasksPass();
    expect(unhandled).toEqual([]);
  });
});

describe.each(ALL_DRIVERS)(
  "a statement made through the transaction once it is over, held unawaited, on %s",
  (driver, database) => {
    it("is refused when awaited, and rejects unhandled in the meantime neither as SQL nor as a prepared query", async () => {
      const { db, query } = database();
      const store = drizzleStore({ db: db as Db });
      let kept: { tx: TransactionOf<Db>; insert: { execute(): Promise<unknown> } } | undefined;
      await store.atomic.transaction(async (session) => {
        const now = Date.now();
        await session.claim({
          id: { scope: "s", path: "notes.add", key: `late-${driver}` },
          fingerprint: "fp",
          now,
          leaseExpiresAt: now + 30_000,
          expiresAt: now + 60_000,
        });
        const { tx } = session;
        // Prepared while the transaction is open, to be run after it.
        const insert = tx
          .insert(notesTable)
          .values({ key: `late-prepared-${driver}` })
          .prepare(`late_${driver.replaceAll(/[^a-z]/g, "_")}`);
        kept = { tx, insert };
      });
      const { tx, insert } = kept as NonNullable<typeof kept>;
      // Sent as a procedure that outlived its transaction would (the engine stopped waiting for it), and not awaited.
      const lateSql = tx.execute(sql`insert into notes (key) values (${`late-sql-${driver}`})`);
      const latePrepared = insert.execute();
      await macrotasksPass();
      expect(unhandled).toEqual([]);
      await expect(lateSql).rejects.toThrow(/transaction is over/);
      await expect(latePrepared).rejects.toThrow(/transaction is over/);
      expect(await query("select key from notes where key like $1", [`late-%-${driver}`])).toHaveLength(0);
    });
  },
);
