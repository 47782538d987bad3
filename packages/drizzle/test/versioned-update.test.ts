/**
 * Optimistic concurrency on each driver: an update based on the version it read goes through once; a second one
 * based on the same version is refused and writes nothing, and so is one for a row that is gone.
 */

import { type Driver, notesDatabases } from "@idemkit/testkit";
import { and, eq } from "drizzle-orm";
import { integer, pgTable, serial, text } from "drizzle-orm/pg-core";
import { beforeAll, describe, expect, it } from "vitest";
import { StaleVersionError, updateIfVersion } from "../src/index.js";

const databases = notesDatabases(2);

const carts = pgTable("carts", {
  id: serial("id").primaryKey(),
  note: text("note").notNull(),
  version: integer("version").notNull().default(1),
});

describe.each(["postgres.js", "node-postgres", "PGlite"] satisfies Driver[])("updateIfVersion on %s", (driver) => {
  beforeAll(() =>
    databases[driver].query(
      "create table if not exists carts (id serial primary key, note text not null, version int not null default 1)",
    ),
  );

  it("writes once per version read, and refuses a write based on a version that moved on", async () => {
    const { db } = databases[driver];
    const [cart] = await db.insert(carts).values({ note: "tea" }).returning();
    const id = Number(cart?.id);
    const edit = (note: string, expectedVersion: number) =>
      updateIfVersion(db, carts, { where: eq(carts.id, id), version: carts.version, expectedVersion, set: { note } });

    expect(await edit("tea and a mug", 1)).toBe(2);
    // A second tab that read version 1 too.
    const stale = edit("just a kettle", 1);
    await expect(stale).rejects.toThrow(StaleVersionError);
    await expect(stale).rejects.toThrow("The carts row is no longer at version 1");
    expect(await db.select().from(carts).where(eq(carts.id, id))).toEqual([{ id, note: "tea and a mug", version: 2 }]);

    await db.delete(carts).where(eq(carts.id, id));
    await expect(edit("gone", 2)).rejects.toThrow(StaleVersionError);
  });

  it("refuses a missing row condition instead of updating every row", async () => {
    const { db, query } = databases[driver];
    const before = await query("select id, note, version from carts order by id");
    await expect(
      updateIfVersion(db, carts, { where: and(), version: carts.version, expectedVersion: 1, set: { note: "all" } }),
    ).rejects.toThrow("`where` must name the row to update");
    expect(await query("select id, note, version from carts order by id")).toEqual(before);
  });
});
