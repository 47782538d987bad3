/**
 * The pg-boss majors the jobs are tested on: 10, which runs on every Node the packages support, 11 (Node 22) and 12
 * (Node 22.12), which npm test reaches when it runs the packages' suites on Node 24. The
 * tests drive each through what it does differently: how it is imported and constructed, how a worker is stopped,
 * how a job is looked up after it completed.
 */
import type PgBoss10 from "pg-boss";

/** A started pg-boss, with what the tests do to it in its version's words. */
export interface TestedBoss {
  /**
   * Typed as pg-boss 10's for the options and calls every major takes alike (deleteJob, notifyWorker);
   * types.test.ts checks each major's own types.
   */
  boss: PgBoss10;
  createQueue(name: string, options?: { retryLimit?: number; retryDelay?: number; policy?: "short" }): Promise<void>;
  /** The job as pg-boss keeps it, completed ones included; null once it is gone. */
  job(queue: string, id: string): Promise<{ state: string; output?: unknown; startAfter: Date; data: unknown } | null>;
  offWork(queue: string, workerId: string): Promise<void>;
  stop(): Promise<void>;
}

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);

export const BOSSES = [
  { version: "pg-boss 10", runsHere: true, start: startPgBoss10 },
  { version: "pg-boss 11", runsHere: major >= 22, start: startPgBoss11 },
  { version: "pg-boss 12", runsHere: major > 22 || (major === 22 && minor >= 12), start: startPgBoss12 },
] as const;

const settings = (connectionString: string) => ({ connectionString, max: 3, schedule: false, supervise: false });

async function startPgBoss10(connectionString: string): Promise<TestedBoss> {
  const { default: PgBoss } = await import("pg-boss");
  const boss = new PgBoss(settings(connectionString));
  boss.on("error", (error) => console.error("pg-boss 10:", error));
  await boss.start();
  return {
    boss,
    createQueue: (name, options) => boss.createQueue(name, { name, ...options }),
    job: (queue, id) => boss.getJobById(queue, id, { includeArchive: true }),
    offWork: (_queue, id) => boss.offWork({ id }),
    stop: () => boss.stop({ graceful: false, wait: true }),
  };
}

async function startPgBoss11(connectionString: string): Promise<TestedBoss> {
  const { default: PgBoss } = await import("pg-boss-11");
  const boss = new PgBoss(settings(connectionString));
  boss.on("error", (error) => console.error("pg-boss 11:", error));
  await boss.start();
  return {
    boss: boss as unknown as PgBoss10,
    createQueue: (name, options) => boss.createQueue(name, options),
    job: (queue, id) => boss.getJobById(queue, id),
    offWork: (_queue, id) => boss.offWork({ id }),
    stop: () => boss.stop({ graceful: false, wait: true }),
  };
}

async function startPgBoss12(connectionString: string): Promise<TestedBoss> {
  const { PgBoss } = await import("pg-boss-12");
  const boss = new PgBoss(settings(connectionString));
  boss.on("error", (error) => console.error("pg-boss 12:", error));
  await boss.start();
  return {
    boss: boss as unknown as PgBoss10,
    createQueue: (name, options) => boss.createQueue(name, options),
    job: (queue, id) => boss.getJobById(queue, id),
    offWork: (queue, id) => boss.offWork(queue, { id }),
    stop: () => boss.stop({ graceful: false }),
  };
}
