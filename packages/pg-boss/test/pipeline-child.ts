/**
 * One process of the confirmation pipeline, for the crash test: a relay that publishes `order.placed` events from
 * the outbox as pg-boss jobs, and a worker that handles each job by recording its confirmation. With HOLD_AT set,
 * it stops the first time it reaches that moment, prints `HOLDING <moment> <detail>` and waits there for the test's
 * SIGKILL: `published` (a job was sent, its event not yet marked published), `handling` (inside a handler, after its
 * write and before the commit) or `completing` (after the handler's commit, before pg-boss marks the job completed).
 */
import { createRequire } from "node:module";
import { createRelay } from "@idemkit/outbox";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import PgBoss from "pg-boss";
import postgres from "postgres";
import { createJobs } from "../src/index.js";

const url = String(process.env.DATABASE_URL);
const holdAt = process.env.HOLD_AT;
const db = drizzle(postgres(url, { max: 3, onnotice: () => {} }));
const boss = new PgBoss({ connectionString: url, max: 3, schedule: false, maintenanceIntervalSeconds: 1 });
boss.on("error", () => {});
await boss.start();
const jobs = createJobs({ boss, db });

// pg-boss completes a job with a statement of its own once the handler has resolved: the moment between the
// handler's commit and that statement is reached by holding pg-boss's completion (its Manager, which is internal).
const Manager = createRequire(import.meta.url)("pg-boss/src/manager.js");
const complete = Manager.prototype.complete;
Manager.prototype.complete = async function (this: unknown, name: string, ids: string[], ...rest: unknown[]) {
  await holdHere("completing", ids.join());
  return complete.call(this, name, ids, ...rest);
};

let held = false;
const holdHere = async (moment: string, detail: string) => {
  if (moment !== holdAt || held) return;
  held = true;
  console.log(`HOLDING ${moment} ${detail}`);
  await new Promise<never>(() => {});
};

createRelay({
  db,
  batchSize: 5,
  leaseMs: 2_000,
  publishTimeoutMs: 1_000,
  idleMs: 50,
  retryDelayMs: () => 100,
  publish: async (event) => {
    await jobs.send({ tx: db }, "order-confirmation", event.payload as object, { key: event.key });
    await holdHere("published", event.key);
  },
}).start();

await jobs.work<{ orderId: number }>("order-confirmation", { pollingIntervalSeconds: 0.5 }, async (job, tx) => {
  await tx.execute(sql`insert into confirmations (order_id) values (${job.data.orderId})`);
  await holdHere("handling", job.id);
});
console.log("READY now");
