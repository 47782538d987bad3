/**
 * Another library's SQL run in a Drizzle transaction on each driver: its parameters arrive as node-postgres would
 * send them (what such libraries are written for), and its writes commit or roll back with the transaction.
 */

import { type Driver, notesDatabases } from "@idemkit/testkit";
import { describe, expect, it } from "vitest";
import { sqlExecutor } from "../src/index.js";

const databases = notesDatabases(2);

describe.each(["postgres.js", "node-postgres", "PGlite"] satisfies Driver[])("sqlExecutor on %s", (driver) => {
  it("sends parameters as node-postgres does: undefined as null, dates as timestamps, objects as JSON", async () => {
    const { db } = databases[driver];
    const at = new Date("2026-11-30T12:34:56.789Z");
    const ids = [globalThis.crypto.randomUUID(), globalThis.crypto.randomUUID()];
    const { rows } = await sqlExecutor(db).executeSql(
      `select $1::text is null as missing, $2::timestamptz = '2026-11-30T12:34:56.789Z'::timestamptz as same_time,
              $3::jsonb ->> 'orderId' as order_id, cardinality($4::uuid[]) as ids, $5::bool as flag, $6::int + 1 as next`,
      [undefined, at, { orderId: 42 }, ids, true, 41],
    );
    expect(rows).toEqual([{ missing: true, same_time: true, order_id: "42", ids: 2, flag: true, next: 42 }]);
  });

  it("writes in the caller's transaction: kept when it commits, gone when it rolls back", async () => {
    const { db, query } = databases[driver];
    const insert = "insert into notes (key) values ($1) returning key";
    const kept = globalThis.crypto.randomUUID();
    const dropped = globalThis.crypto.randomUUID();
    await db.transaction((tx) => sqlExecutor(tx).executeSql(insert, [kept]));
    const failure = new Error("rolled back");
    await expect(
      db.transaction(async (tx) => {
        expect((await sqlExecutor(tx).executeSql(insert, [dropped])).rows).toEqual([{ key: dropped }]);
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await query("select key from notes where key = any($1)", [[kept, dropped]])).toEqual([{ key: kept }]);
  });
});
