/**
 * `npm run bench:guard`: what `guardedConnections` costs while nothing fails, against postgres.js alone, on one
 * throwaway PostgreSQL, in interleaved rounds so machine noise hits both pools alike. Each pool runs 8 loops of the
 * statements an app sends: a one-row select, a transaction of two inserts, and a select of 5,000 rows.
 *
 * Environment: BENCH_SECONDS per round and pool (6), BENCH_ROUNDS (4).
 */
import { guardedConnections } from "@idemkit/postgres-js-guard";
import { createDatabase, startPostgres } from "@idemkit/testkit";
import postgres from "postgres";
import { printTable } from "./shared";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);

const server = await startPostgres();
const { url, drop } = await createDatabase(server.url, "idemkit_bench_guard");
const options = { max: 8, onnotice: () => {} };
const pools = {
  "postgres.js alone": postgres(url, options),
  guardedConnections: postgres(url, guardedConnections(options)),
};
await pools["postgres.js alone"]`create table bench_rows (id serial primary key, note text not null)`;

const WORK = [
  (sql: postgres.Sql) => sql`select 1 as one`,
  (sql: postgres.Sql) =>
    sql.begin(async (tx) => [
      await tx`insert into bench_rows (note) values ('a')`,
      await tx`insert into bench_rows (note) values ('b')`,
    ]),
  (sql: postgres.Sql) => sql`select generate_series(1, 5000) as n`,
];

/** Each kind of work per second on `sql`, 8 loops of it for SECONDS / 3 each. */
async function rates(sql: postgres.Sql): Promise<number[]> {
  const rates: number[] = [];
  for (const work of WORK) {
    let count = 0;
    const started = performance.now();
    const until = started + (SECONDS * 1_000) / WORK.length;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (performance.now() < until) {
          await work(sql);
          count++;
        }
      }),
    );
    rates.push(count / ((performance.now() - started) / 1_000));
  }
  return rates;
}

const results = new Map<string, number[][]>(Object.keys(pools).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, sql] of Object.entries(pools)) results.get(name)?.push(await rates(sql));
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const medians = new Map(
  [...results].map(([name, rounds]) => [name, [0, 1, 2].map((k) => median(rounds.map((r) => r[k] ?? 0)))]),
);
const alone = medians.get("postgres.js alone") ?? [1, 1, 1];
printTable(
  ["pool", "one-row selects/s", "transactions/s", "5,000-row selects/s", "vs postgres.js alone"],
  [...medians].map(([name, [select = 0, transaction = 0, rows = 0]]) => [
    name,
    select.toFixed(0),
    transaction.toFixed(0),
    rows.toFixed(0),
    [select / (alone[0] ?? 1), transaction / (alone[1] ?? 1), rows / (alone[2] ?? 1)]
      .map((ratio) => `${ratio.toFixed(2)}x`)
      .join(", "),
  ]),
);
for (const sql of Object.values(pools)) await sql.end({ timeout: 1 });
await drop();
await server.stop();
process.exit(0);
