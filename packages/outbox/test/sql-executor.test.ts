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

  it("sends a value once however often its $n appears, as pg-boss's insert refers to its start-after three times", async () => {
    const { db } = databases[driver];
    // One parameter, so one type (text, from right()): the cast in the branch not taken never sees "60". Sent as
    // three parameters, the middle one would be typed timestamptz, and "60" would fail to bind.
    const { rows } = await sqlExecutor(db).executeSql(
      `select $2::int as second, case when right($1, 1) = 'Z' then cast($1 as timestamp with time zone) end as at,
              coalesce($1, '0') as given`,
      ["60", 2],
    );
    expect(rows).toEqual([{ second: 2, at: null, given: "60" }]);
  });

  it("refuses SQL that refers to a value it was not given, sending nothing", async () => {
    const { db } = databases[driver];
    await expect(sqlExecutor(db).executeSql("select $1::int + $2::int as sum", [1])).rejects.toThrow(
      "sqlExecutor: the SQL refers to $2, but 1 value(s) were given.",
    );
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
