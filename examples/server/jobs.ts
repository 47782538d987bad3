/**
 * The confirmation as a pg-boss job, for an app that runs pg-boss: placeOrder sends it in its transaction in place
 * of the outbox event, and a worker handles each job once.
 */
// #region jobs
import { createJobs, type JobTarget } from "@idemkit/pg-boss";
import { PgBoss } from "pg-boss";
import { db } from "./db";
import { env } from "./env";
import { sentMail } from "./schema";

const boss = new PgBoss(env.databaseUrl);
await boss.start();
await boss.createQueue("order-confirmation", { expireInSeconds: 60 });
const jobs = createJobs({ boss, db });

// In placeOrder, `await sendConfirmationJob(ctx.idempotency, order.orderId)`: the job exists if and only if the
// order committed.
export function sendConfirmationJob(call: JobTarget<typeof db>, orderId: number) {
  return jobs.send(call, "order-confirmation", { orderId }, { key: `order-confirmation:${orderId}` });
}

// In a worker process: each job takes effect once, written in the transaction it is given.
export function workConfirmations() {
  return jobs.work<{ orderId: number }>("order-confirmation", {}, async (job, tx) => {
    await tx.insert(sentMail).values({ orderId: job.data.orderId });
  });
}
// #endregion jobs
