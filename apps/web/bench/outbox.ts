/**
 * `npm run bench:outbox`: what the effects after the response cost, on a throwaway PostgreSQL with durability
 * (fsync on), in interleaved rounds so machine noise hits every scenario alike:
 * - the relay's throughput in events/s, one relay and two side by side (one process, one pool), publishing to a
 *   function that does nothing (what is measured is claiming, leasing and marking);
 * - a consumer's messages/s writing one row per message: in a plain transaction, and through processOnce (the
 *   same transaction plus the de-duplication record), and the ratio of the two;
 * - the same consumers on redeliveries: processOnce skipping what it has done, against the plain handler doing it
 *   again.
 *
 * Environment: BENCH_EVENTS per relay round (5000), BENCH_MESSAGES per consumer round (3000), BENCH_CONCURRENCY of
 * the consumers (8), BENCH_ROUNDS (3).
 */
import { createOutbox, createRelay, processOnce } from "@idemkit/outbox";
import { createDatabase, startPostgres } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { openDatabase } from "../src/server/database";
import { printTable } from "./shared";

const EVENTS = Number(process.env.BENCH_EVENTS ?? 5_000);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 3_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ENQUEUED_PER_TRANSACTION = 100;

const postgresServer = await startPostgres({ durable: true });
const database = await createDatabase(postgresServer.url, "idemkit_bench_outbox");
const { db, close } = await openDatabase({ url: database.url, max: 10 });
const outbox = createOutbox();
await db.execute(sql`create table bench_effects (id serial primary key, message int not null)`);

/** Fills the outbox with `count` pending events (not timed). */
async function enqueue(count: number): Promise<void> {
  for (let done = 0; done < count; done += ENQUEUED_PER_TRANSACTION) {
    await db.transaction(async (tx) => {
      for (let n = done; n < Math.min(count, done + ENQUEUED_PER_TRANSACTION); n++) {
        await outbox.enqueue({ tx }, { topic: "order.placed", payload: { orderId: n }, key: crypto.randomUUID() });
      }
    });
  }
}

/** Events/s for `relays` relays draining `EVENTS` pending events side by side, each batch after batch. */
async function relayRate(relays: number): Promise<number> {
  await enqueue(EVENTS);
  let published = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: relays }, async () => {
      const relay = createRelay({ db, publish: () => {} });
      for (;;) {
        const batch = await relay.runOnce();
        published += batch.published;
        if (batch.published + batch.failed + batch.dead === 0) return;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1_000;
  if (published !== EVENTS) throw new Error(`the relays published ${published} of ${EVENTS} events`);
  return EVENTS / seconds;
}

type Handler = (eventId: string, message: number) => Promise<unknown>;
const plain: Handler = (_eventId, message) =>
  db.transaction(async (tx) => {
    await tx.execute(sql`insert into bench_effects (message) values (${message})`);
  });
const once: Handler = (eventId, message) =>
  processOnce({ db, consumer: "bench", eventId }, async (tx) => {
    await tx.execute(sql`insert into bench_effects (message) values (${message})`);
  });

/** Messages/s for `handler` over `ids`, `CONCURRENCY` at a time. */
async function consumerRate(handler: Handler, ids: string[]): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < ids.length) {
        const n = next++;
        await handler(ids[n] as string, n);
      }
    }),
  );
  return ids.length / ((performance.now() - started) / 1_000);
}

const scenarios = {
  "relay, one": [] as number[],
  "relay, two side by side": [] as number[],
  "consumer, plain transaction": [] as number[],
  "consumer, processOnce": [] as number[],
  "redelivery, plain transaction (runs again)": [] as number[],
  "redelivery, processOnce (skipped)": [] as number[],
};
type Scenario = keyof typeof scenarios;
const measure = async (scenario: Scenario, rate: Promise<number>) => scenarios[scenario].push(await rate);

// A warm-up of each path, not counted.
await relayRate(1);
await consumerRate(
  plain,
  Array.from({ length: 500 }, () => crypto.randomUUID()),
);
await consumerRate(
  once,
  Array.from({ length: 500 }, () => crypto.randomUUID()),
);

for (let round = 0; round < ROUNDS; round++) {
  await measure("relay, one", relayRate(1));
  await measure("relay, two side by side", relayRate(2));
  const ids = Array.from({ length: MESSAGES }, () => crypto.randomUUID());
  await measure("consumer, plain transaction", consumerRate(plain, ids));
  await measure("consumer, processOnce", consumerRate(once, ids));
  await measure("redelivery, plain transaction (runs again)", consumerRate(plain, ids));
  await measure("redelivery, processOnce (skipped)", consumerRate(once, ids));
  await db.execute(sql`truncate outbox_events, processed_events, bench_effects`);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
/** The median of the rounds' ratios: each round's two figures were measured back to back. */
const ratio = (name: Scenario, baseline: Scenario) =>
  median(scenarios[name].map((rate, round) => rate / (scenarios[baseline][round] ?? Number.NaN)));
const baselines: Partial<Record<Scenario, Scenario>> = {
  "relay, two side by side": "relay, one",
  "consumer, processOnce": "consumer, plain transaction",
  "redelivery, processOnce (skipped)": "redelivery, plain transaction (runs again)",
};
console.log(
  `\nidemkit bench:outbox: ${ROUNDS} rounds of ${EVENTS} events and ${MESSAGES} messages, consumers ${CONCURRENCY} at a time, pool 10, PostgreSQL fsync on\n`,
);
printTable(
  ["scenario", "per s (median)", "per round", "vs"],
  (Object.keys(scenarios) as Scenario[]).map((name) => {
    const baseline = baselines[name];
    return [
      name,
      median(scenarios[name]).toFixed(0),
      scenarios[name].map((rate) => rate.toFixed(0)).join(" "),
      baseline ? `${ratio(name, baseline).toFixed(2)}x ${baseline}` : "",
    ];
  }),
);

await close();
await database.drop();
await postgresServer.stop();
