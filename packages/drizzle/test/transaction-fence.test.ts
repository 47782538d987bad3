/**
 * The fence on idemkit's own statements (`own`), on a real PostgreSQL: they go through the transaction while it is
 * open, and once it is over they are refused before anything is sent, so that a completion sent after the driver
 * gave the transaction up can never commit on another connection, outside it.
 */
import { openPostgres } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Statement } from "../src/statement-text.js";
import { command, run } from "../src/statements.js";
import { fenceTransaction } from "../src/transaction-fence.js";

let server: Awaited<ReturnType<typeof openPostgres>>;
beforeAll(async () => {
  server = await openPostgres(inject("postgresUrl"), { max: 2 });
  await server.query("create table fence_notes (id serial primary key, note text not null)");
});
afterAll(async () => {
  await server?.close();
});

const ADD: Statement = {
  name: "fence_test_add",
  steps: { added: "insert into fence_notes (note) values ($1::text) returning id" },
  text: "select id from added",
  columns: ["id"],
};

describe("idemkit's own statements in a fenced transaction", () => {
  it("run while it is open, and are refused once it is over, with nothing sent", async () => {
    let closedOwn: ReturnType<typeof fenceTransaction>["own"] | undefined;
    await server.db.transaction(async (tx) => {
      const fence = fenceTransaction(tx);
      expect(await run(fence.own, ADD, ["inside"])).toHaveLength(1);
      await command(fence.own, "savepoint fence_test");
      fence.close();
      closedOwn = fence.own;
      await expect(run(fence.own, ADD, ["after close, in the transaction"])).rejects.toThrow(/transaction is over/);
    });
    const own = closedOwn as NonNullable<typeof closedOwn>;
    // After the commit, as a completion sent once the driver gave the transaction up would be.
    await expect(run(own, ADD, ["after commit"])).rejects.toThrow(/transaction is over/);
    await expect(command(own, "select 1")).rejects.toThrow(/transaction is over/);
    expect(await server.query("select note from fence_notes order by id")).toEqual([{ note: "inside" }]);
  });
});
