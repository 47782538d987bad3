/**
 * idemkit's transactions on a postgres.js 3.4.9 pool whose connection the database ends under them (here by
 * `pg_terminate_backend`, as a crash or a restart ends it), on a real PostgreSQL: plain, and through
 * `@idemkit/postgres-js-guard`; on postgres.js 4, where idemkit begins and ends the transactions itself; and on
 * node-postgres, whose transactions idemkit runs on a client it checks out. Pools have one connection, so the next statement must go through the connection
 * that was ended. vitest fails a run on any uncaught exception, so "nothing uncaught" is checked by every test.
 */
import { guardedConnections } from "@idemkit/postgres-js-guard";
import { endingConnections } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle as drizzleNodePostgres } from "drizzle-orm/node-postgres";
import { drizzle } from "drizzle-orm/postgres-js";
import pg from "pg";
import postgres from "postgres";
import postgres4 from "postgres4";
import { describe, expect, it } from "vitest";
import { drizzleStore } from "../src/index.js";
import { claimFor } from "./claim-request.js";

const endingDatabase = endingConnections();

function pool({ guarded }: { guarded: boolean }): postgres.Sql {
  const options = { max: 1, connect_timeout: 2, onnotice: () => {} };
  return endingDatabase.track(postgres(endingDatabase.url, guarded ? guardedConnections(options) : options));
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const { terminate, terminateBackendOf } = endingDatabase;

describe("idemkit's own transactions, on a plain postgres.js pool", () => {
  it("never have postgres.js throw uncaught for a connection that closed under them", async () => {
    const db = drizzle(pool({ guarded: false }));
    const store = drizzleStore({ db });
    const key = globalThis.crypto.randomUUID();
    const call = store.atomic.transaction(async (session) => {
      await session.claim(claimFor(key));
      const [row] = (await session.tx.execute(sql`select pg_backend_pid() as pid`)) as unknown as Array<{
        pid: number;
      }>;
      const slow = session.tx.execute(sql`select pg_sleep(5)`);
      await pause(50);
      await terminate(row?.pid);
      // Fails when the connection closes, and so does the procedure, at once.
      await slow;
    });
    await expect(call).rejects.toThrow();
    // Nothing was thrown uncaught (vitest would fail the run). The pool's next statements may still meet
    // postgres.js's stale state: that is the guard's to end (@idemkit/postgres-js-guard's tests).
  });
});

describe("drizzleStore on a guarded pool", () => {
  it.each(["fails", "catches the failure and returns"] as const)(
    "refuse an atomic call whose connection ended just after its claim, whose procedure %s, and serve the next",
    (ending) => refusesAndServesTheNext(drizzle(pool({ guarded: true })), ending),
  );
});

describe("drizzleStore on postgres.js 4, whose transactions idemkit begins itself", () => {
  it.each(["fails", "catches the failure and returns"] as const)(
    "refuses an atomic call whose connection ended just after its claim, whose procedure %s, and serves the next",
    (ending) => {
      const client = postgres4(endingDatabase.url, { max: 1, connect_timeout: 2, onnotice: () => {} });
      return refusesAndServesTheNext(drizzle(endingDatabase.track(client as never)), ending);
    },
  );
});

describe("drizzleStore on node-postgres, whose transactions run on a pipelined client", () => {
  it.each(["fails", "catches the failure and returns"] as const)(
    "refuses an atomic call whose connection ended just after its claim, whose procedure %s, and serves the next",
    async (ending) => {
      // A client's error while it is checked out would otherwise be an 'error' event nobody listens to.
      const pool = new pg.Pool({ connectionString: endingDatabase.url, max: 1 });
      try {
        await refusesAndServesTheNext(drizzleNodePostgres(pool) as never, ending);
      } finally {
        await pool.end();
      }
    },
  );
});

/**
 * An atomic call on a pool of one whose connection the database ends right after the claim: the call is refused,
 * nothing of it kept, and the next call on the pool is served.
 */
async function refusesAndServesTheNext(
  db: ReturnType<typeof drizzle>,
  ending: "fails" | "catches the failure and returns",
): Promise<void> {
  const store = drizzleStore({ db });
  const key = globalThis.crypto.randomUUID();
  const call = store.atomic.transaction(async (session) => {
    await session.claim(claimFor(key));
    await terminateBackendOf(session.tx);
    const next = session.tx.execute(sql`select 1`);
    await (ending === "fails" ? next : next.catch(() => {}));
    await session.complete(claimFor(key).id, { status: 200, body: "{}" }, Date.now() + 60_000, {
      undoEffects: false,
    });
    return "done";
  });
  await expect(call).rejects.toThrow();
  expect(await store.get(claimFor(key).id)).toBeUndefined();
  expect(await store.atomic.transaction((session) => session.claim(claimFor(key)))).toMatchObject({
    status: "claimed",
  });
}
