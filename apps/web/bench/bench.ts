/**
 * `npm run bench`: what protection costs, over HTTP on 127.0.0.1 against a real PostgreSQL at its default
 * durability (fsync on). One run measures, in interleaved rounds so machine noise hits all alike:
 *
 *   unprotected       the order's writes (order, lines, payment) in a plain transaction
 *   hand-written atomic  the same writes made exactly-once by hand, the least a correct design does (the claim an
 *                     insert on conflict do nothing in the same transaction, the answer an update before commit):
 *                     the floor idemkit's first execution is measured against
 *   first execution   the same writes protected by idemkit (atomic mode), a fresh key per request
 *   first execution + outbox  the demo's checkout.placeOrder: those writes and its confirmation in the outbox
 *   replay (cache)    duplicates of completed requests, answered from the in-process replay cache
 *   replay (no cache) duplicates answered from PostgreSQL (another instance, or the cache turned off)
 *   no-op             a procedure that does nothing, unprotected, and its protected twin replayed from the cache:
 *                     the floor that HTTP and tRPC set, against which a cached replay should add nothing
 *   lease, <store>    the unprotected writes in lease mode (the mode of effects outside the database), keys kept
 *                     in PostgreSQL (drizzleStore) or in Redis (redisStore, AOF with appendfsync everysec), first
 *                     execution and replay (no replay cache: the store answers), Redis compared with PostgreSQL
 *
 * and prints requests/s, p50 and p99 latency, the server's CPU time per request, and each throughput as a ratio
 * of unprotected.
 * Environment: DATABASE_URL (else a throwaway server), BENCH_SECONDS per round (3), BENCH_CONNECTIONS (16).
 */
import { Agent } from "node:http";
import { createDatabase, startPostgres, startRedis } from "@idemkit/testkit";
import { openDatabase } from "../src/server/database";
import { type Answer, percentile, post, printTable, startBenchServer } from "./shared";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = 3;
const REPLAY_KEYS = 2_000;
const BODY = JSON.stringify({
  json: {
    items: [
      { sku: "tea", qty: 2 },
      { sku: "mug", qty: 1 },
    ],
  },
});

interface Scenario {
  name: string;
  path: string;
  key: (n: number) => string | undefined;
  /** The scenario its rate is compared with. Default: unprotected. */
  baseline?: string;
}

const replayKeys = Array.from({ length: REPLAY_KEYS }, () => globalThis.crypto.randomUUID());
const scenarios: Scenario[] = [
  { name: "unprotected", path: "bench.placeOrderUnprotected", key: () => undefined },
  { name: "hand-written atomic", path: "bench.placeOrderHandWritten", key: () => globalThis.crypto.randomUUID() },
  {
    name: "first execution",
    path: "bench.placeOrderAtomic",
    key: () => globalThis.crypto.randomUUID(),
    baseline: "hand-written atomic",
  },
  {
    name: "first execution + outbox",
    path: "checkout.placeOrder",
    key: () => globalThis.crypto.randomUUID(),
  },
  { name: "replay (cache)", path: "checkout.placeOrder", key: (n) => replayKeys[n % REPLAY_KEYS] },
  { name: "replay (no cache)", path: "bench.placeOrderNoCache", key: (n) => replayKeys[n % REPLAY_KEYS] },
  { name: "no-op, unprotected", path: "bench.noopUnprotected", key: () => undefined },
  {
    name: "no-op, replay (cache)",
    path: "bench.noop",
    key: (n) => replayKeys[n % REPLAY_KEYS],
    baseline: "no-op, unprotected",
  },
  { name: "lease, PostgreSQL, first", path: "bench.leaseOrderPostgres", key: () => globalThis.crypto.randomUUID() },
  {
    name: "lease, Redis, first",
    path: "bench.leaseOrderRedis",
    key: () => globalThis.crypto.randomUUID(),
    baseline: "lease, PostgreSQL, first",
  },
  {
    name: "lease, PostgreSQL, replay",
    path: "bench.leaseOrderPostgres",
    key: (n) => replayKeys[n % REPLAY_KEYS],
    baseline: "replay (no cache)",
  },
  {
    name: "lease, Redis, replay",
    path: "bench.leaseOrderRedis",
    key: (n) => replayKeys[n % REPLAY_KEYS],
    baseline: "lease, PostgreSQL, replay",
  },
];

const postgresServer = await startPostgres({ durable: true });
const database = await createDatabase(postgresServer.url, "idemkit_bench");
const migrated = await openDatabase({ url: database.url, max: 1 });
await migrated.close();
const redisServer = await startRedis({ appendfsync: "everysec" });
process.env.REDIS_URL = redisServer.url;
const server = await startBenchServer(database.url);
const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });

const send = (path: string, key: string | undefined): Promise<Answer> =>
  post(`${server.url}/api/trpc/${path}`, { agent, user: "bench", key, body: BODY });

interface Measure {
  requests: number;
  errors: number;
  seconds: number;
  latenciesMs: number[];
  serverCpuMs: number;
}

async function serverCpuMs(): Promise<number> {
  const response = await fetch(`${server.url}/api/trpc/bench.cpuMs`);
  const body = (await response.json()) as { result: { data: { json: number } } };
  return body.result.data.json;
}

async function drive(scenario: Scenario, durationSeconds: number): Promise<Measure> {
  const latenciesMs: number[] = [];
  let requests = 0;
  let errors = 0;
  let sequence = 0;
  const cpuBefore = await serverCpuMs();
  const started = performance.now();
  const deadline = started + durationSeconds * 1_000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < deadline) {
        const begin = performance.now();
        const { status } = await send(scenario.path, scenario.key(sequence++));
        latenciesMs.push(performance.now() - begin);
        requests++;
        if (status !== 200) errors++;
      }
    }),
  );
  const elapsedSeconds = (performance.now() - started) / 1_000;
  return { requests, errors, seconds: elapsedSeconds, latenciesMs, serverCpuMs: (await serverCpuMs()) - cpuBefore };
}

// The replay keys must exist before anyone replays them, under each path that replays them (a record belongs to
// its procedure), and everything gets a warm-up.
for (const key of replayKeys) {
  for (const path of [
    "checkout.placeOrder",
    "bench.placeOrderNoCache",
    "bench.noop",
    "bench.leaseOrderPostgres",
    "bench.leaseOrderRedis",
  ]) {
    await send(path, key);
  }
}
for (const scenario of scenarios) await drive(scenario, 1);

const totals = new Map<string, Measure>(
  scenarios.map((s) => [s.name, { requests: 0, errors: 0, seconds: 0, latenciesMs: [], serverCpuMs: 0 }]),
);
for (let round = 1; round <= ROUNDS; round++) {
  for (const scenario of scenarios) {
    const measure = await drive(scenario, SECONDS);
    const total = totals.get(scenario.name) as Measure;
    total.requests += measure.requests;
    total.errors += measure.errors;
    total.seconds += measure.seconds;
    total.serverCpuMs += measure.serverCpuMs;
    total.latenciesMs.push(...measure.latenciesMs);
  }
}

const rateOf = (name: string) => {
  const total = totals.get(name) as Measure;
  return total.requests / total.seconds;
};
console.log(
  `\nidemkit bench: ${CONNECTIONS} connections, ${ROUNDS} rounds x ${SECONDS} s per scenario, PostgreSQL fsync on, pool ${process.env.BENCH_POOL ?? 10}, Redis AOF everysec\n`,
);
printTable(
  ["scenario", "req/s", "p50 ms", "p99 ms", "server CPU ms/req", "errors", "vs baseline"],
  scenarios.map(({ name, baseline = "unprotected" }) => {
    const total = totals.get(name) as Measure;
    const sorted = total.latenciesMs.sort((a, b) => a - b);
    const rate = total.requests / total.seconds;
    return [
      name,
      rate.toFixed(0),
      percentile(sorted, 50).toFixed(2),
      percentile(sorted, 99).toFixed(2),
      (total.serverCpuMs / total.requests).toFixed(3),
      String(total.errors),
      `${(rate / rateOf(baseline)).toFixed(2)}x ${baseline}`,
    ];
  }),
);

agent.destroy();
await server.stop();
await database.drop();
await postgresServer.stop();
await redisServer.stop();
