/**
 * processOnce on connections the database ends under postgres.js 3.4.9 (by `pg_terminate_backend`, as a crash or a
 * restart ends them), on a real PostgreSQL: nothing commits outside its transaction, and the redelivery runs. Pools
 * have one connection, so the next statement goes through the connection that was ended.
 */
import { guardedConnections } from "@idemkit/postgres-js-guard";
import { endingConnections } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { processOnce } from "../src/index.js";

const ending = endingConnections();
const { terminateBackendOf } = ending;

function pool({ guarded }: { guarded: boolean }): postgres.Sql {
  const options = { max: 1, connect_timeout: 2, onnotice: () => {} };
  return ending.track(postgres(ending.url, guarded ? guardedConnections(options) : options));
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("processOnce on a plain postgres.js pool", () => {
  it("refuses a handler's statement sent after postgres.js gave its transaction up: nothing commits outside it", async () => {
    const db = drizzle(pool({ guarded: false }));
    const eventId = globalThis.crypto.randomUUID();
    await ending.admin`create table if not exists handled (event_id text not null)`;
    const outcome = processOnce({ db, consumer: "mailer", eventId }, async (tx) => {
      await terminateBackendOf(tx);
      await pause(100);
      await tx.execute(sql`insert into handled (event_id) values (${eventId})`);
    });
    await expect(outcome).rejects.toThrow();
    expect(await ending.admin`select 1 from handled where event_id = ${eventId}`).toEqual([]);
  });
});

describe("processOnce on a guarded postgres.js pool", () => {
  it("rejects processOnce whose handler's connection ended, and processes the redelivery", async () => {
    const db = drizzle(pool({ guarded: true }));
    const eventId = globalThis.crypto.randomUUID();
    const outcome = processOnce({ db, consumer: "mailer", eventId }, async (tx) => {
      await terminateBackendOf(tx);
      await tx.execute(sql`select 1`);
    });
    await expect(outcome).rejects.toThrow();
    expect(await processOnce({ db, consumer: "mailer", eventId }, async () => "sent")).toEqual({
      processed: true,
      value: "sent",
    });
  });
});
