/**
 * The postgres.js defects behind docs/failure-behaviour.md's note, reproduced without idemkit, and the same
 * load through `guardedConnections`: transactions in a loop on a pool of 10 while PostgreSQL crashes (immediate
 * shutdown) and comes back. postgres.js 3.4.9 alone throws uncaught `TypeError: Cannot read properties of null
 * (reading 'write')` for writes on connections that closed under a transaction, leaves some statements never settled,
 * and keeps failing transactions after the database is back (porsager/postgres#1154, #1208; unfixed in 3.4.9).
 *
 *   npm run chaos:driver -w @idemkit/web
 */
import { guardedConnections } from "@idemkit/postgres-js-guard";
import { createDatabase, startPostgres } from "@idemkit/testkit";
import postgres from "postgres";

const server = await startPostgres();
let uncaught = 0;
process.on("uncaughtException", () => {
  uncaught++;
});
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One crash under the load of 20 loops of transactions on a pool of 10: what the pool did after the database was back. */
async function crashUnder(name: string, options: postgres.Options<Record<string, postgres.PostgresType>>) {
  const { url, drop } = await createDatabase(server.url);
  // Reconnections at most 1 s apart (postgres.js's default backoff grows to 20 s), as docs/failure-behaviour.md advises.
  const sql = postgres(url, {
    max: 10,
    onnotice: () => {},
    backoff: (n: number) => Math.min(0.1 * 2 ** n, 1),
    ...options,
  });
  await sql`create table t (id serial primary key)`;
  const uncaughtBefore = uncaught;
  const unsettled = new Set<number>();
  let resumedAt = Number.POSITIVE_INFINITY;
  let failedAfter = 0;
  let lastFailureMs = 0;
  let stopping = false;
  let next = 0;
  async function worker(): Promise<void> {
    while (!stopping) {
      const id = next++;
      unsettled.add(id);
      const sentAt = performance.now();
      await sql
        .begin(async (tx) => {
          await tx`insert into t default values`;
          await tx`select pg_sleep(0.005)`;
        })
        .catch(() => {
          if (sentAt >= resumedAt) {
            failedAfter++;
            lastFailureMs = Math.max(lastFailureMs, Math.round(sentAt - resumedAt));
          }
          return pause(50);
        });
      unsettled.delete(id);
    }
  }
  const workers = Array.from({ length: 20 }, worker);
  await pause(1_500);
  await server.crash?.();
  await pause(2_000);
  await server.resume?.();
  resumedAt = performance.now();
  await pause(5_000);
  stopping = true;
  await Promise.race([Promise.all(workers), pause(5_000)]);
  await sql.end({ timeout: 1 });
  await drop();
  return {
    pool: name,
    transactions: next,
    "uncaught TypeErrors": uncaught - uncaughtBefore,
    "never settled": unsettled.size,
    "failed after the database was back": failedAfter,
    "last of them sent, ms after": failedAfter > 0 ? lastFailureMs : "-",
  };
}

const rows = [await crashUnder("postgres.js alone", {}), await crashUnder("guardedConnections", guardedConnections())];
console.table(rows);
await server.stop();
process.exit(0);
