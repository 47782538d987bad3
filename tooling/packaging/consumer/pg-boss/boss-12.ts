/** A started pg-boss 12 (an ES module that names its class) with its queue. */
import { PgBoss } from "pg-boss";

export async function startBoss(connectionString: string, queue: string): Promise<PgBoss> {
  const boss = new PgBoss({ connectionString, max: 2, schedule: false, supervise: false });
  await boss.start();
  await boss.createQueue(queue);
  return boss;
}
