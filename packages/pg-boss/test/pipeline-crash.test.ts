/**
 * The whole confirmation pipeline through crashes of real processes: orders enqueue `order.placed` in their own
 * transactions, relays publish the events as pg-boss jobs, workers handle them through processOnce, and the test
 * SIGKILLs the processes while replacements start: after a job was sent and before its event was marked, inside a
 * handler before its commit, after the commit and before pg-boss completed the job (each announced by the process),
 * or at a random moment. Every order ends with exactly one confirmation: none lost, none twice.
 */
import { createOutbox } from "@idemkit/outbox";
import { openPostgres, type ScriptProcess, spawnScript } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import PgBoss from "pg-boss";
import { afterAll, beforeAll, expect, inject, it, vi } from "vitest";

/** Orders placed before each kill. */
const ORDERS_PER_KILL = 4;
/** Kills at least, and until every moment was caught; at most MAX_KILLS. */
const KILLS = 10;
const MAX_KILLS = 30;
const MOMENTS = ["published", "handling", "completing"];

let database: Awaited<ReturnType<typeof openPostgres>>;

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 4 });
  await database.query("create table orders (id serial primary key)");
  await database.query("create table confirmations (id serial primary key, order_id int not null)");
  // The queue, with a job's run expiring after 2 s: a killed worker's job is retried then, not after 15 minutes.
  const boss = new PgBoss({ connectionString: database.url, max: 1, schedule: false, supervise: false });
  await boss.start();
  await boss.createQueue("order-confirmation", {
    name: "order-confirmation",
    expireInSeconds: 2,
    retryLimit: 50,
    retryDelay: 0,
  });
  await boss.stop({ graceful: false, wait: true });
});
afterAll(() => database.close());

it(`gives each order one confirmation while relays and workers are killed ${KILLS} times or more`, async () => {
  const outbox = createOutbox();
  const placeOrders = async (count: number) => {
    for (let order = 0; order < count; order++) {
      await database.db.transaction(async (tx) => {
        const [row] = await tx.execute<{ id: number }>(sql`insert into orders default values returning id`);
        const orderId = Number(row?.id);
        await outbox.enqueue({ tx }, { topic: "order.placed", payload: { orderId }, key: `order.placed:${orderId}` });
      });
    }
  };

  /** A process of the pipeline, once it is working, and the moment it announced holding at (its first). */
  interface Running {
    child: ScriptProcess;
    ready: Promise<string>;
    holding: Promise<string>;
  }
  let started = 0;
  const start = (holdAt = MOMENTS[started++ % MOMENTS.length]): Running => {
    const child = spawnScript(new URL("./pipeline-child.ts", import.meta.url), {
      DATABASE_URL: database.url,
      HOLD_AT: String(holdAt),
    });
    const holding = child.next("HOLDING").then((where) => {
      const moment = where.split(" ")[0] ?? where;
      holds.push(moment);
      return moment;
    });
    return { child, ready: child.next("READY"), holding };
  };
  const running = new Set<Running>();
  /** The moments processes were killed at (held there until the kill). */
  const holds: string[] = [];

  try {
    // Orders keep arriving while processes die, so every moment has work to be caught in.
    let kills = 0;
    const caughtEveryMoment = () => MOMENTS.every((moment) => holds.includes(moment));
    while (kills < KILLS || (!caughtEveryMoment() && kills < MAX_KILLS)) {
      await placeOrders(ORDERS_PER_KILL);
      while (running.size < 2) running.add(start());
      const candidates = [...running];
      // Killed where it holds, or at a random moment once every process is working.
      const atRandom = Promise.all(candidates.map(({ ready }) => ready)).then(
        () =>
          new Promise<Running>((resolve) =>
            setTimeout(() => resolve(candidates[kills % candidates.length] as Running), Math.random() * 1_000),
          ),
      );
      const victim = await Promise.race([
        ...candidates.map((candidate) => candidate.holding.then(() => candidate)),
        atRandom,
      ]);
      running.delete(victim);
      await victim.child.kill();
      kills++;
    }
    // The survivors may be holding for ever: they crash too, and one last process that does not hold finishes.
    await Promise.all([...running].map(({ child }) => child.kill()));
    running.clear();
    running.add(start("nowhere"));
    await vi.waitFor(
      async () => {
        const [row] = await database.query<{ unconfirmed: number }>(
          "select count(*)::int as unconfirmed from orders where id not in (select order_id from confirmations)",
        );
        expect(row?.unconfirmed).toBe(0);
      },
      { timeout: 60_000, interval: 200 },
    );
  } finally {
    await Promise.all([...running].map(({ child }) => child.kill()));
  }

  const perOrder = await database.query<{ order_id: number; confirmations: number }>(
    "select o.id as order_id, count(c.id)::int as confirmations from orders o left join confirmations c on c.order_id = o.id group by o.id",
  );
  expect(perOrder.filter((row) => row.confirmations !== 1)).toEqual([]);
  expect(new Set(holds)).toEqual(new Set(MOMENTS));
  console.log(
    `pipeline crash test: ${perOrder.length} orders, ${holds.length} processes killed at an announced moment: ${holds.join(", ")}`,
  );
}, 120_000);
