/**
 * The postgres.js defect behind the README's "Failure behaviour" note, reproduced without idemkit: transactions on a
 * pool while PostgreSQL crashes (immediate shutdown) and comes back. postgres.js 3.4.9 throws an uncaught
 * `TypeError: Cannot read properties of null (reading 'write')` from a write it scheduled on a connection that has
 * closed since, and the statement behind it never settles (porsager/postgres#1154, #1208; unfixed in 3.4.9).
 *
 *   npm run chaos:driver -w @idemkit/web
 */
import { createDatabase, startPostgres } from "@idemkit/testkit";
import postgres from "postgres";

const server = await startPostgres();
const { url } = await createDatabase(server.url);
const sql = postgres(url, { max: 10, onnotice: () => {} });
await sql`create table t (id serial primary key)`;

let uncaught = 0;
process.on("uncaughtException", () => {
  uncaught++;
});
const unsettled = new Set<number>();
let stopping = false;
let next = 0;
async function worker(): Promise<void> {
  while (!stopping) {
    const id = next++;
    unsettled.add(id);
    await sql
      .begin(async (tx) => {
        await tx`insert into t default values`;
        await tx`select pg_sleep(0.005)`;
      })
      .catch(() => new Promise((resolve) => setTimeout(resolve, 50)));
    unsettled.delete(id);
  }
}
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const workers = Array.from({ length: 20 }, worker);
await pause(1_500);
await server.crash?.();
await pause(2_000);
await server.resume?.();
await pause(5_000);
stopping = true;
await Promise.race([Promise.all(workers), pause(5_000)]);
console.log(
  `${next} transactions; uncaught TypeErrors: ${uncaught}; never settled 5 s after the load stopped: ${unsettled.size}`,
);
await sql.end({ timeout: 1 });
await server.stop();
process.exit(0);
