/**
 * Idempotent pg-boss jobs against a real PostgreSQL and a real pg-boss worker: a job exists if and only if the
 * transaction that sent it committed, the same key is one job, and a job pg-boss runs again takes effect once.
 */
import { gate, openNodePostgres, openPostgres } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { afterAll, afterEach, beforeAll, describe, expect, inject, test, vi } from "vitest";
import { createJobs, type Jobs, jobIdFor } from "../src/index.js";
import { BOSSES, type TestedBoss } from "./bosses.js";

const QUEUE = "order-confirmation";

const DRIVERS = [
  ["postgres.js", openPostgres],
  ["node-postgres", openNodePostgres],
] as const;

const CASES = BOSSES.flatMap((tested) => DRIVERS.map(([driver, open]) => ({ ...tested, driver, open })));

describe.each(CASES)("$version on $driver", ({ runsHere, start, open }) => {
  let database: Awaited<ReturnType<typeof open>>;
  let boss: TestedBoss;
  let jobs: Jobs<(typeof database)["db"], TestedBoss["boss"]>;
  const workers: string[] = [];

  beforeAll(async () => {
    if (!runsHere) return;
    database = await open(inject("postgresUrl"), { max: 4 });
    await database.query("create table sent (id serial primary key, order_id int not null, attempt int not null)");
    boss = await start(database.url);
    await boss.createQueue(QUEUE, { retryLimit: 2, retryDelay: 0 });
    jobs = createJobs({ boss: boss.boss, db: database.db });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((id) => boss.offWork(QUEUE, id)));
  });
  afterAll(async () => {
    if (!runsHere) return;
    await boss.stop();
    await database.close();
  });
  const it = runsHere ? test : test.skip;

  const orderKey = () => `order-confirmation:${globalThis.crypto.randomUUID()}`;
  const sendCommitted = (key: string, orderId: number) =>
    database.db.transaction((tx) => jobs.send({ tx }, QUEUE, { orderId }, { key }));
  const sentFor = async (orderId: number) =>
    (await database.query<{ attempt: number }>("select attempt from sent where order_id = $1", [orderId])).map(
      (row) => row.attempt,
    );
  const stateOf = async (id: string) => (await boss.job(QUEUE, id))?.state;
  /** How many sessions of this test's database are waiting for a lock. */
  const blockedOnLocks = async () => {
    const [row] = await database.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    return row?.n;
  };
  const nextOrder = (() => {
    let orderId = 0;
    return () => ++orderId;
  })();

  it("sends a job once its transaction commits, under the id its key derives", async () => {
    const key = orderKey();
    const result = await sendCommitted(key, 1);
    expect(result).toEqual({ id: jobIdFor(QUEUE, key), sent: true });
    expect(await boss.job(QUEUE, result.id)).toMatchObject({ state: "created", data: { orderId: 1 } });
  });

  it("sends a job to start later, as pg-boss's own send would (its start-after is one parameter used three times)", async () => {
    const key = orderKey();
    const before = Date.now();
    const result = await database.db.transaction((tx) =>
      jobs.send({ tx }, QUEUE, { orderId: 5 }, { key, startAfter: 60 }),
    );
    const job = await boss.job(QUEUE, result.id);
    expect(job?.startAfter.getTime()).toBeGreaterThanOrEqual(before + 59_000);
  });

  it("keeps two tenants' jobs with one key apart: a protected call's scope is part of the job's id", async () => {
    const key = "order-confirmation:42";
    const send = (scope: string, orderId: number) =>
      database.db.transaction((tx) => jobs.send({ tx, scope }, QUEUE, { orderId }, { key }));
    const tenantA = `tenant-a-${globalThis.crypto.randomUUID()}`;
    const tenantB = `tenant-b-${globalThis.crypto.randomUUID()}`;
    expect(await send(tenantA, 42)).toEqual({ id: jobIdFor(QUEUE, key, tenantA), sent: true });
    expect(await send(tenantB, 42)).toEqual({ id: jobIdFor(QUEUE, key, tenantB), sent: true });
    expect(await send(tenantA, 42)).toMatchObject({
      id: jobIdFor(QUEUE, key, tenantA),
      sent: false,
      reason: "exists",
    });
    expect(jobIdFor(QUEUE, key, tenantA)).not.toBe(jobIdFor(QUEUE, key));
  });

  it("leaves no job when the transaction that sent it rolls back", async () => {
    const key = orderKey();
    const failure = new Error("the order failed after its job was sent");
    await expect(
      database.db.transaction(async (tx) => {
        await jobs.send({ tx }, QUEUE, { orderId: 2 }, { key });
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await boss.job(QUEUE, jobIdFor(QUEUE, key))).toBeNull();
    // The key is free: the order's successful retry sends it.
    expect(await sendCommitted(key, 2)).toMatchObject({ sent: true });
  });

  it("stores one job for a key sent again, also from two transactions at once", async () => {
    const key = orderKey();
    // The first transaction holds its job uncommitted until the second one's insert waits on it.
    const { opened: sentFirst, open: markSentFirst } = gate();
    const { opened: secondWaits, open: letFirstCommit } = gate();
    const first = database.db.transaction(async (tx) => {
      const result = await jobs.send({ tx }, QUEUE, { orderId: 3 }, { key });
      markSentFirst();
      await secondWaits;
      return result;
    });
    await sentFirst;
    const second = sendCommitted(key, 3);
    await vi.waitFor(async () => expect(await blockedOnLocks()).toBe(1));
    letFirstCommit();
    const id = jobIdFor(QUEUE, key);
    expect(await first).toEqual({ id, sent: true });
    expect(await second).toEqual({ id, sent: false, reason: "exists", state: "created" });
    expect(await sendCommitted(key, 3)).toEqual({ id, sent: false, reason: "exists", state: "created" });
    const [row] = await database.query<{ count: number }>(
      "select count(*)::int as count from pgboss.job where name = $1 and data->>'orderId' = '3'",
      [QUEUE],
    );
    expect(row?.count).toBe(1);
  });

  it("says when the queue's policy refused a job, which is then not stored", async () => {
    // A short queue holds one queued job at a time (per singletonKey).
    await boss.createQueue("digest", { policy: "short" });
    const first = await database.db.transaction((tx) => jobs.send({ tx }, "digest", {}, { key: orderKey() }));
    const second = await database.db.transaction((tx) => jobs.send({ tx }, "digest", {}, { key: orderKey() }));
    expect(first).toMatchObject({ sent: true });
    expect(second).toEqual({ id: second.id, sent: false, reason: "refused" });
    expect(await boss.job("digest", second.id)).toBeNull();
  });

  it("refuses a send to a queue that does not exist, naming it", async () => {
    await expect(
      database.db.transaction((tx) => jobs.send({ tx }, "no-such-queue", {}, { key: orderKey() })),
    ).rejects.toThrow(/queue no-such-queue does not exist/i); // pg-boss 12 says so itself
  });

  it("refuses a send without a transaction or without a key", async () => {
    // Lease mode's ctx.idempotency, whose tx is undefined: refused by the types, and at run time.
    await expect(jobs.send({ tx: undefined as never }, QUEUE, {}, { key: orderKey() })).rejects.toThrow(TypeError);
    await expect(database.db.transaction((tx) => jobs.send({ tx }, QUEUE, {}, { key: "" }))).rejects.toThrow(
      "needs a key",
    );
  });

  it("refuses pg-boss 12's work options that would settle each job in processOnce's place", async () => {
    const handler = async () => undefined;
    for (const settling of ["perJobResults", "transactional"]) {
      await expect(jobs.work(QUEUE, { [settling]: true }, handler)).rejects.toThrow(`${settling} is not an option`);
    }
  });

  it("works a job once, with its effect in the handler's transaction", async () => {
    const orderId = nextOrder() + 100;
    const { id } = await sendCommitted(orderKey(), orderId);
    workers.push(
      await jobs.work<{ orderId: number }>(QUEUE, { pollingIntervalSeconds: 0.5 }, async (job, tx) => {
        await tx.execute(sql`insert into sent (order_id, attempt) values (${job.data.orderId}, 1)`);
        return { mailed: job.data.orderId };
      }),
    );
    await vi.waitFor(async () => expect(await stateOf(id)).toBe("completed"), { timeout: 10_000 });
    expect(await sentFor(orderId)).toEqual([1]);
    expect((await boss.job(QUEUE, id))?.output).toEqual({ mailed: orderId });
  });

  it("retries a job whose handler threw with nothing of that attempt kept", async () => {
    const orderId = nextOrder() + 200;
    const { id } = await sendCommitted(orderKey(), orderId);
    let attempt = 0;
    workers.push(
      await jobs.work<{ orderId: number }>(QUEUE, { pollingIntervalSeconds: 0.5 }, async (job, tx) => {
        attempt += 1;
        await tx.execute(sql`insert into sent (order_id, attempt) values (${job.data.orderId}, ${attempt})`);
        if (attempt === 1) throw new Error("the mail server refused");
      }),
    );
    await vi.waitFor(async () => expect(await stateOf(id)).toBe("completed"), { timeout: 10_000 });
    expect(await sentFor(orderId)).toEqual([2]);
  });

  it("fails only the job that threw in a batch: the others take effect and complete, the failed one is retried", async () => {
    const first = nextOrder() + 400;
    const orderIds = [first, first + 1, first + 2, first + 3];
    const sent = await Promise.all(orderIds.map((orderId) => sendCommitted(orderKey(), orderId)));
    const throwing = orderIds[1];
    let thrown = false;
    workers.push(
      await jobs.work<{ orderId: number }>(QUEUE, { batchSize: 4, pollingIntervalSeconds: 0.5 }, async (job, tx) => {
        await tx.execute(sql`insert into sent (order_id, attempt) values (${job.data.orderId}, 1)`);
        if (job.data.orderId === throwing && !thrown) {
          thrown = true;
          throw new Error("the mail server refused this one");
        }
      }),
    );
    await vi.waitFor(
      async () => expect(await Promise.all(sent.map(({ id }) => stateOf(id)))).toEqual(sent.map(() => "completed")),
      { timeout: 10_000 },
    );
    expect(thrown).toBe(true);
    expect(await Promise.all(orderIds.map(sentFor))).toEqual(orderIds.map(() => [1]));
    const retries = await database.query<{ id: string; retry_count: number }>(
      "select id, retry_count from pgboss.job where id = any($1::uuid[])",
      [sent.map(({ id }) => id)],
    );
    const retriesOf = new Map(retries.map((row) => [row.id, row.retry_count]));
    expect(sent.map(({ id }) => retriesOf.get(id))).toEqual([0, 1, 0, 0]);
  });

  it("takes effect once for a job pg-boss runs again after it was done (sent again once the first was gone)", async () => {
    const orderId = nextOrder() + 300;
    const key = orderKey();
    const { id } = await sendCommitted(key, orderId);
    let runs = 0;
    const worker = await jobs.work<{ orderId: number }>(QUEUE, { pollingIntervalSeconds: 0.5 }, async (job, tx) => {
      if (job.data.orderId !== orderId) return;
      runs += 1;
      await tx.execute(sql`insert into sent (order_id, attempt) values (${job.data.orderId}, ${runs})`);
    });
    workers.push(worker);
    await vi.waitFor(async () => expect(await stateOf(id)).toBe("completed"), { timeout: 10_000 });
    // pg-boss forgets a job once it is archived and dropped: the same key is then a new job with the same id.
    await boss.boss.deleteJob(QUEUE, id);
    expect(await sendCommitted(key, orderId)).toEqual({ id, sent: true });
    boss.boss.notifyWorker(worker);
    await vi.waitFor(async () => expect(await stateOf(id)).toBe("completed"), { timeout: 10_000 });
    expect(runs).toBe(1);
    expect(await sentFor(orderId)).toEqual([1]);
  });
});
