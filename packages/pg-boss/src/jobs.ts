/**
 * Idempotent background jobs on pg-boss, the PostgreSQL job queue an app may already run. A job is sent in the
 * protected call's transaction, so it exists if and only if the call's writes committed, under an id derived from
 * its business key (`order-confirmation:42`), so sending it again (a replayed call, a re-run relay) stores nothing
 * new while pg-boss keeps the first. Its handler runs through `processOnce`, in one transaction with the record
 * that the job was done: a job that pg-boss runs twice (its worker died, its completion was lost, it expired while
 * still running, it was sent again after the first was deleted) takes effect once.
 */
import { sha256Hex } from "@idemkit/core/internal";
import type { AnyPgDatabase, TransactionOf } from "@idemkit/drizzle";
import { type ProcessedEventsTable, processOnce, type SqlExecutor, sqlExecutor } from "@idemkit/outbox";

/**
 * What the jobs use of a started pg-boss: `new PgBoss(…)` of pg-boss 10, 11 or 12 is one. The options `send` and
 * `work` take, and the job a handler receives, are that version's own (see {@link SendOptionsOf}, {@link JobOf}).
 */
export interface JobQueue {
  /** Sends a job under `id` through `db`, the protected call's transaction. */
  send(name: string, data: object, options: { id: string; db: SqlExecutor }): Promise<string | null>;
  /** Reads a job, to tell one sent before from one never sent. */
  // Written so pg-boss 10's signature fits, whose options must name includeArchive (false unless given).
  getJobById(
    name: string,
    id: string,
    options?: { db?: SqlExecutor; includeArchive?: boolean },
  ): Promise<{ state: string } | null>;
  /** Whether the queue exists. */
  getQueue(name: string): Promise<object | null>;
  /** Runs `handler` for the queue's jobs. */
  work(
    name: string,
    options: object,
    handler: (jobs: Array<{ id: string; expireInSeconds: number }>) => Promise<unknown>,
  ): Promise<string>;
  /** Fails a job, with what went wrong. */
  fail(name: string, id: string, data: object): Promise<unknown>;
}

/** The options `boss.send` takes in the installed pg-boss. */
export type SendOptionsOf<Boss extends JobQueue> = NonNullable<Parameters<Boss["send"]>[2]>;

/** The options `boss.work` takes in the installed pg-boss. */
export type WorkOptionsOf<Boss extends JobQueue> = NonNullable<Parameters<Boss["work"]>[1]>;

/** The job the installed pg-boss hands a worker, carrying `Data`. */
export type JobOf<Boss extends JobQueue, Data> = Omit<Parameters<Parameters<Boss["work"]>[2]>[0][number], "data"> & {
  data: Data;
};

/**
 * Where a job is sent from: the protected procedure's `ctx.idempotency`, any `{ tx }` of the app's own, or
 * `{ tx: db }` where no transaction is open (a relay's `publish`).
 */
export interface JobTarget<TDb extends AnyPgDatabase> {
  tx: TransactionOf<TDb> | TDb;
  /**
   * Whose job it is: `ctx.idempotency` carries the call's scope (the user or tenant), and the job's id is derived
   * from it too, so two tenants' `order-confirmation:42` are two jobs. Without one, the key alone names the job.
   */
  scope?: string;
}

/** What `send` did: created the job, or not, and why not. */
export type SendResult =
  | { id: string; sent: true }
  /** A job with this key is in the queue (in `state`: it may have failed; pg-boss keeps it until it deletes it). */
  | { id: string; sent: false; reason: "exists"; state: string }
  /** The queue's policy (short, singleton, stately) or a `singletonKey` refused it: no job was stored. */
  | { id: string; sent: false; reason: "refused" };

/** pg-boss's send options, with the job's business key in place of its id. */
export type IdempotentSendOptions<Boss extends JobQueue = JobQueue> = Omit<SendOptionsOf<Boss>, "id" | "db"> & {
  /**
   * What the job does, once: `order-confirmation:42`. The job's id is derived from it (and the queue), so the same
   * key sent twice is one job.
   */
  key: string;
};

/** What `createJobs` takes: the started pg-boss, your database, and the processed-events table when not the default. */
export interface JobsOptions<TDb extends AnyPgDatabase, Boss extends JobQueue> {
  /** A started pg-boss (`await boss.start()`), on the database `db` connects to: 10, 11 or 12. */
  boss: Boss;
  /** The database the handlers write to: the record of processed jobs must be in it. */
  db: TDb;
  /** The record's table, when it is not the default `processedEvents`. */
  table?: ProcessedEventsTable;
}

/** What a handler receives: the job, and the transaction its effects must be written in to happen once. */
export type IdempotentJobHandler<TDb extends AnyPgDatabase, Data, Result, Boss extends JobQueue = JobQueue> = (
  job: JobOf<Boss, Data>,
  tx: TransactionOf<TDb>,
) => Promise<Result>;

/**
 * pg-boss's work options, less the two of pg-boss 12 that hand the handler's outcome to pg-boss (`perJobResults`,
 * `transactional`): each job's outcome is settled here, through `processOnce`.
 */
export type IdempotentWorkOptions<Boss extends JobQueue = JobQueue> = Omit<
  WorkOptionsOf<Boss>,
  "perJobResults" | "transactional"
> & {
  /** Who processes the jobs, for the processed-jobs record. Default: the queue's name. */
  consumer?: string;
};

/**
 * The id pg-boss stores a job under for `key` on `queue`, in `scope` when the job was sent from a protected call
 * (its `ctx.idempotency.scope`): a UUID (version 8, RFC 9562) from a SHA-256 of them, so every sender computes the
 * same one.
 */
export function jobIdFor(queue: string, key: string, scope?: string): string {
  const hex = sha256Hex(JSON.stringify(scope === undefined ? [queue, key] : [queue, key, scope]));
  const variant = ((Number.parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** Creates the sender and the worker of idempotent jobs over `boss`, handled in `db`. */
export function createJobs<TDb extends AnyPgDatabase, Boss extends JobQueue>({
  boss,
  db,
  table,
}: JobsOptions<TDb, Boss>) {
  return {
    /**
     * Sends a job in `target`'s transaction: it is created once that transaction commits, and never if it rolls
     * back. Its id comes from the queue, `key` and the target's scope (see {@link jobIdFor}). Resolves the job's id and whether this call created it; when not, whether a job with this key is
     * already in the queue, or the queue's policy refused it. The queue must exist (`boss.createQueue`).
     */
    async send<Data extends object>(
      target: JobTarget<TDb>,
      queue: string,
      data: Data,
      { key, ...options }: IdempotentSendOptions<Boss>,
    ): Promise<SendResult> {
      const { tx } = target;
      if (typeof tx !== "object" || tx === null) {
        throw new TypeError(
          "jobs.send() needs a transaction: ctx.idempotency in atomic mode, or { tx } with a transaction of your " +
            "own (in lease mode ctx.idempotency.tx is undefined).",
        );
      }
      if (typeof key !== "string" || key.length === 0) {
        throw new TypeError(`jobs.send(): a ${queue} job needs a key, a non-empty string naming what it does.`);
      }
      const executor = sqlExecutor(tx);
      const id = jobIdFor(queue, key, target.scope);
      if ((await boss.send(queue, data, { ...options, id, db: executor })) !== null) return { id, sent: true };
      // pg-boss answers null for a job already there and a policy's refusal; 10 and 11 for a missing queue too.
      const existing = await boss.getJobById(queue, id, { db: executor });
      if (existing) return { id, sent: false, reason: "exists", state: existing.state };
      if (!(await boss.getQueue(queue))) {
        throw new Error(`jobs.send(): the queue ${queue} does not exist. Create it once with boss.createQueue().`);
      }
      return { id, sent: false, reason: "refused" };
    },

    /**
     * Works `queue` with `handler`, each job through `processOnce` (the consumer, the job's id): a job pg-boss
     * delivers again after it was done completes without running. A throw fails that job (and no other of its
     * batch) for pg-boss to retry, with nothing of its run kept. Resolves pg-boss's worker id (for `boss.offWork`).
     */
    async work<Data = object, Result = unknown>(
      queue: string,
      { consumer = queue, ...options }: IdempotentWorkOptions<Boss>,
      handler: IdempotentJobHandler<TDb, Data, Result, Boss>,
    ): Promise<string> {
      for (const settling of ["perJobResults", "transactional"]) {
        if (settling in options) {
          throw new TypeError(
            `jobs.work(): ${settling} is not an option here: each job's outcome is settled through processOnce.`,
          );
        }
      }
      return boss.work(queue, options, async (jobs) => {
        let result: Result | undefined;
        for (const job of jobs) {
          // pg-boss stops waiting for a run at its expiry and lets the job be taken again: a run stuck behind
          // another run of the same job (hung, or not yet known dead) stops waiting then too.
          const lockTimeoutMs = job.expireInSeconds * 1_000;
          try {
            const outcome = await processOnce(
              { db, consumer, eventId: job.id, lockTimeoutMs, ...(table && { table }) },
              (tx) => handler(job as JobOf<Boss, Data>, tx),
            );
            result = outcome.processed ? outcome.value : undefined;
          } catch (error) {
            // pg-boss fails a whole batch when its callback throws, the jobs done with it and those not yet run:
            // this job alone fails here, and pg-boss then completes only the jobs still active.
            await boss.fail(queue, job.id, error as object);
          }
        }
        // pg-boss keeps a callback's result as the job's output only for a batch of one.
        return result;
      });
    },
  };
}

/** The jobs `createJobs` makes: `send` in a protected call, `work` to handle each job once. */
export type Jobs<TDb extends AnyPgDatabase, Boss extends JobQueue = JobQueue> = ReturnType<
  typeof createJobs<TDb, Boss>
>;
