/**
 * A user's worker, written against the installed tarballs and the installed pg-boss only (10, 11 or 12, whichever
 * end of the range this app has): a job sent in a committed transaction and in a rolled-back one, the same key sent
 * again, the job worked, then deleted and sent again under the same key: pg-boss runs it a second time, and the
 * handler does not run again. Prints what it saw as JSON for the peer-range test.
 */
import { createJobs } from "@idemkit/pg-boss";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { startBoss } from "./boss.js";

const QUEUE = "order-confirmation";

async function main(): Promise<void> {
  const url = String(process.env.IDEMKIT_PEER_DATABASE_URL);
  const client = postgres(url, { max: 4, onnotice: () => {} });
  const db = drizzle({ client });
  await db.execute(sql`create table if not exists mailed (order_id int not null)`);
  const boss = await startBoss(url, QUEUE);
  try {
    const jobs = createJobs({ boss, db });
    const key = `order-confirmation:${globalThis.crypto.randomUUID()}`;
    const first = await db.transaction((tx) => jobs.send({ tx }, QUEUE, { orderId: 42 }, { key, priority: 1 }));
    const again = await db.transaction((tx) => jobs.send({ tx }, QUEUE, { orderId: 42 }, { key }));
    const undone = `${key}:undone`;
    await db
      .transaction(async (tx) => {
        await jobs.send({ tx }, QUEUE, { orderId: 43 }, { key: undone });
        throw new Error("the order failed after its job was sent");
      })
      .catch(() => undefined);
    const undoneSentLater = await db.transaction((tx) => jobs.send({ tx }, QUEUE, { orderId: 43 }, { key: undone }));

    const completed = (id: string) =>
      new Promise<void>((resolve) => {
        const check = setInterval(async () => {
          if ((await boss.getJobById(QUEUE, id))?.state !== "completed") return;
          clearInterval(check);
          resolve();
        }, 100);
      });
    let runs = 0;
    const worker = await jobs.work<{ orderId: number }>(QUEUE, { pollingIntervalSeconds: 0.5 }, async (job, tx) => {
      runs += 1;
      if (job.data.orderId === 42) await tx.execute(sql`insert into mailed (order_id) values (42)`);
    });
    await Promise.all([completed(first.id), completed(undoneSentLater.id)]);
    await boss.deleteJob(QUEUE, first.id);
    const resent = await db.transaction((tx) => jobs.send({ tx }, QUEUE, { orderId: 42 }, { key }));
    boss.notifyWorker(worker);
    await completed(resent.id);
    const [mailed] = await client<Array<{ n: number }>>`select count(*)::int as n from mailed where order_id = 42`;
    console.log(JSON.stringify({ first, again, undoneSentLater, resent, runs, mailed: mailed?.n }));
  } finally {
    await boss.stop({ graceful: false });
    await client.end({ timeout: 1 });
  }
}

await main();
