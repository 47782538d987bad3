/**
 * The contract's model (`@idemkit/testkit`'s describeContractModel) against the engine and the Drizzle store on real
 * PostgreSQL, in both modes; in atomic mode the business rows the procedure writes are counted too.
 */
import { IdempotencyMode } from "@idemkit/core";
import { describeContractModel, openPostgres } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, inject } from "vitest";
import { drizzleStore, type TransactionOf } from "../src/index.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 4 });
  await database.query("create table model_rows (record text not null)");
});
afterAll(() => database?.close());

type Db = typeof database.db;

describeContractModel("drizzleStore on PostgreSQL", {
  modes: [IdempotencyMode.ATOMIC, IdempotencyMode.LEASE],
  open: () => ({
    store: drizzleStore({ db: database.db }),
    write: (tx: TransactionOf<Db>, marker: string) =>
      tx.execute(sql`insert into model_rows (record) values (${marker})`),
    count: async (marker: string) => {
      const [row] = await database.query<{ n: number }>("select count(*)::int as n from model_rows where record = $1", [
        marker,
      ]);
      return row?.n ?? 0;
    },
  }),
});
