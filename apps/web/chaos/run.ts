/**
 * `npm run chaos`: the demo's failure behaviour at size, as a table. Every row is real processes on a throwaway
 * PostgreSQL: cold starts, database crashes and shutdowns under load with the instances left running, and an
 * instance killed under load. Per instance it prints when it first served again after the fault, how many requests
 * sent after the fault were not served and when the last of them was sent, and the uncaught exceptions it logged
 * (any is a failure, as is an order placed twice or lost). Sizes: CHAOS_INSTANCES (3), CHAOS_CLIENTS (24), CHAOS_OUTAGE_MS (5000),
 * CHAOS_ROUNDS (2).
 */
import { startPostgres } from "@idemkit/testkit";
import { coldStart, instanceKilled, type OutageRow, outageUnderLoad } from "./scenarios";

const size = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const instances = size("CHAOS_INSTANCES", 3);
const clients = size("CHAOS_CLIENTS", 24);
const outageMs = size("CHAOS_OUTAGE_MS", 5_000);
const rounds = size("CHAOS_ROUNDS", 2);

const server = await startPostgres();
if (!server.crash || !server.halt) {
  await server.stop();
  throw new Error("npm run chaos stops and crashes its own throwaway PostgreSQL: unset DATABASE_URL.");
}
const rows: OutageRow[] = [];
try {
  for (let round = 1; round <= rounds; round++) {
    const cold = await coldStart(server, instances);
    for (const instance of cold.instances) instance.kill();
    console.log(`cold start of ${instances} instances on an empty database: ready after ${cold.readyMs.join(", ")} ms`);
    for (const fault of ["crash", "halt"] as const) {
      const row = await outageUnderLoad(server, {
        instances,
        clients,
        beforeMs: 3_000,
        outageMs,
        afterMs: 10_000,
        fault,
      });
      rows.push(row);
      console.log(`${row.scenario}: done`);
    }
    rows.push(await instanceKilled(server, { instances, clients, beforeMs: 3_000, afterMs: 5_000 }));
  }
} finally {
  await server.stop();
}

console.log(`\n${clients} clients; every action is one user and one key, retried with the same key until answered.\n`);
console.table(
  rows.map((row) => ({
    scenario: row.scenario,
    "outage ms": row.outageMs,
    actions: row.actions,
    requests: row.answers,
    "answers by status": Object.entries(row.byStatus)
      .map(([status, count]) => `${status}: ${count}`)
      .join(", "),
    "slowest answer ms": row.slowestMs,
    "first 200 ms per instance": Object.values(row.recoveryMs)
      .map((ms) => ms ?? "never")
      .join(", "),
    "failed after, per instance (last sent at ms)": Object.values(row.failedAfter)
      .map(({ count, lastSentMs }) => (count === 0 ? "0" : `${count} (${lastSentMs})`))
      .join(", "),
    uncaught: row.uncaught,
    duplicates: row.duplicates,
    lost: row.lost,
    "not placed": row.failed,
    "left in progress": row.inProgress,
  })),
);
const broken = rows.filter(
  (row) => row.duplicates > 0 || row.lost > 0 || row.failed > 0 || row.inProgress > 0 || row.uncaught > 0,
);
if (broken.length > 0) {
  console.error(`${broken.length} scenario(s) broke the contract`);
  process.exitCode = 1;
}
