/**
 * `npm run bench`: what protection costs, over HTTP on 127.0.0.1 against a real PostgreSQL at its default
 * durability (fsync on). One run measures, in interleaved rounds so machine noise hits all alike:
 *
 *   unprotected       the order's writes (order, lines, payment) in a plain transaction
 *   hand-written atomic  the same writes made exactly-once by hand, the least a correct design does (the claim an
 *                     insert on conflict do nothing in the same transaction, the answer an update before commit):
 *                     the floor idemkit's first execution is measured against
 *   hand-written, idemkit's statements  the same by hand with the statements idemkit sends (its claim, savepoint
 *                     and completion) and none of its engine: what its SQL costs, apart from its code
 *   first execution   the same writes protected by idemkit (atomic mode), a fresh key per request
 *   first execution + outbox  the demo's checkout.placeOrder: those writes and its confirmation in the outbox
 *   replay (cache)    duplicates of completed requests, answered from the in-process replay cache
 *   replay (no cache) duplicates answered from PostgreSQL (another instance, or the cache turned off)
 *   no-op             a procedure that does nothing, unprotected, and its protected twin replayed from the cache:
 *                     the floor that HTTP and tRPC set, against which a cached replay should add nothing
 *   lease, <store>    the unprotected writes in lease mode (the mode of effects outside the database), keys kept
 *                     in PostgreSQL (drizzleStore), in Redis (redisStore, AOF with appendfsync everysec) or in
 *                     DynamoDB's API (dynamoStore on dynalite, in memory, on this machine), first execution and
 *                     replay (no replay cache: the store answers), Redis and DynamoDB compared with PostgreSQL
 *
 * and prints requests/s, p50 and p99 latency, the server's CPU time per request, and each throughput as a ratio
 * of its baseline.
 *
 * A change worth a few points needs a comparison in one run, as two identical servers differ by that much across
 * runs: BENCH_AGAINST names another built checkout of this repository (`npm run bench:against -- <git ref>` makes
 * one), whose bench server runs beside this one's on the same database; each round drives every scenario on both,
 * alternating which goes first, and each row gains its rate as a ratio of the other checkout's.
 * Environment: DATABASE_URL (else a throwaway server), BENCH_SECONDS per round (3), BENCH_ROUNDS (3),
 * BENCH_CONNECTIONS (16), BENCH_ONLY (scenario names, separated by ";"; their baselines run too), BENCH_AGAINST.
 */
import { Agent } from "node:http";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createTable } from "@idemkit/dynamodb";
import { createDatabase, startDynamo, startPostgres, startRedis } from "@idemkit/testkit";
import { openDatabase } from "../src/server/database";
import { type Answer, type BenchServer, percentile, post, printTable, startBenchServer } from "./shared";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const AGAINST = process.env.BENCH_AGAINST;
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
  /** Whether it replays: its keys are used once on its path before the rounds. */
  replays?: boolean;
}

const replayKeys = Array.from({ length: REPLAY_KEYS }, () => globalThis.crypto.randomUUID());
const replayKey = (n: number) => replayKeys[n % REPLAY_KEYS];
const allScenarios: Scenario[] = [
  { name: "unprotected", path: "bench.placeOrderUnprotected", key: () => undefined },
  { name: "hand-written atomic", path: "bench.placeOrderHandWritten", key: () => globalThis.crypto.randomUUID() },
  {
    name: "hand-written, idemkit's statements",
    path: "bench.placeOrderIdemkitSql",
    key: () => globalThis.crypto.randomUUID(),
    baseline: "hand-written atomic",
  },
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
  { name: "replay (cache)", path: "checkout.placeOrder", key: replayKey, replays: true },
  { name: "replay (no cache)", path: "bench.placeOrderNoCache", key: replayKey, replays: true },
  { name: "no-op, unprotected", path: "bench.noopUnprotected", key: () => undefined },
  {
    name: "no-op, replay (cache)",
    path: "bench.noop",
    key: replayKey,
    replays: true,
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
    name: "lease, DynamoDB, first",
    path: "bench.leaseOrderDynamo",
    key: () => globalThis.crypto.randomUUID(),
    baseline: "lease, PostgreSQL, first",
  },
  {
    name: "lease, PostgreSQL, replay",
    path: "bench.leaseOrderPostgres",
    key: replayKey,
    replays: true,
    baseline: "replay (no cache)",
  },
  {
    name: "lease, Redis, replay",
    path: "bench.leaseOrderRedis",
    key: replayKey,
    replays: true,
    baseline: "lease, PostgreSQL, replay",
  },
  {
    name: "lease, DynamoDB, replay",
    path: "bench.leaseOrderDynamo",
    key: replayKey,
    replays: true,
    baseline: "lease, PostgreSQL, replay",
  },
];

/** The scenarios BENCH_ONLY names, with the baselines they are compared with; else all of them. */
function chosen(only: string | undefined): Scenario[] {
  if (!only) return allScenarios;
  const names = new Set(
    only
      .split(";")
      .map((name) => name.trim())
      .filter(Boolean),
  );
  const unknown = [...names].filter((name) => !allScenarios.some((s) => s.name === name));
  if (unknown.length > 0) throw new Error(`BENCH_ONLY: no scenario named ${unknown.join(", ")}`);
  // A baseline has its own baseline, named before it.
  for (const scenario of [...allScenarios].reverse()) {
    if (names.has(scenario.name)) names.add(scenario.baseline ?? "unprotected");
  }
  return allScenarios.filter((scenario) => names.has(scenario.name));
}
const scenarios = chosen(process.env.BENCH_ONLY);

const postgresServer = await startPostgres({ durable: true });
const database = await createDatabase(postgresServer.url, "idemkit_bench");
const migrated = await openDatabase({ url: database.url, max: 1 });
await migrated.close();
const redisServer = await startRedis({ appendfsync: "everysec" });
process.env.REDIS_URL = redisServer.url;
const dynamoServer = await startDynamo();
process.env.DYNAMODB_ENDPOINT = dynamoServer.endpoint;
process.env.BENCH_DYNAMODB_TABLE = "idempotency";
const dynamo = new DynamoDBClient({
  endpoint: dynamoServer.endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "bench", secretAccessKey: "bench" },
});
// dynalite has no Time to Live: the rounds outlast no record anyway.
await createTable(dynamo, process.env.BENCH_DYNAMODB_TABLE, { timeToLive: false });
dynamo.destroy();

interface Target {
  /** How its rows are marked: "" for this checkout's, else the other's. */
  label: string;
  server: BenchServer;
  agent: Agent;
}
const startTarget = async (label: string, checkout?: string): Promise<Target> => ({
  label,
  server: await startBenchServer(database.url, checkout),
  agent: new Agent({ keepAlive: true, maxSockets: CONNECTIONS }),
});
const targets = [await startTarget("")];
if (AGAINST) targets.push(await startTarget(" @against", AGAINST));

const send = (target: Target, path: string, key: string | undefined): Promise<Answer> =>
  post(`${target.server.url}/api/trpc/${path}`, { agent: target.agent, user: "bench", key, body: BODY });

interface Measure {
  requests: number;
  errors: number;
  seconds: number;
  latenciesMs: number[];
  serverCpuMs: number;
}

async function serverCpuMs(target: Target): Promise<number> {
  const response = await fetch(`${target.server.url}/api/trpc/bench.cpuMs`);
  const body = (await response.json()) as { result: { data: { json: number } } };
  return body.result.data.json;
}

async function drive(target: Target, scenario: Scenario, durationSeconds: number): Promise<Measure> {
  const latenciesMs: number[] = [];
  let requests = 0;
  let errors = 0;
  let sequence = 0;
  const cpuBefore = await serverCpuMs(target);
  const started = performance.now();
  const deadline = started + durationSeconds * 1_000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < deadline) {
        const begin = performance.now();
        const { status } = await send(target, scenario.path, scenario.key(sequence++));
        latenciesMs.push(performance.now() - begin);
        requests++;
        if (status !== 200) errors++;
      }
    }),
  );
  const elapsedSeconds = (performance.now() - started) / 1_000;
  const serverCpu = (await serverCpuMs(target)) - cpuBefore;
  return { requests, errors, seconds: elapsedSeconds, latenciesMs, serverCpuMs: serverCpu };
}

// The replay keys must exist before anyone replays them, under each path that replays them (a record belongs to
// its procedure), and on each server (each has its own replay cache); everything gets a warm-up.
const replayedPaths = new Set(scenarios.filter((s) => s.replays).map((s) => s.path));
for (const target of targets) {
  for (const key of replayKeys) for (const path of replayedPaths) await send(target, path, key);
  for (const scenario of scenarios) await drive(target, scenario, 1);
}

const rowName = (scenario: Scenario, target: Target) => `${scenario.name}${target.label}`;
const totals = new Map<string, Measure>();
for (let round = 1; round <= ROUNDS; round++) {
  for (const [index, scenario] of scenarios.entries()) {
    // Which checkout goes first alternates by round and by scenario, so that over any number of rounds each goes
    // first about as often, and neither always follows the same scenario.
    const order = (round + index) % 2 === 1 ? targets : [...targets].reverse();
    for (const target of order) {
      const measure = await drive(target, scenario, SECONDS);
      const total = totals.get(rowName(scenario, target)) ?? {
        requests: 0,
        errors: 0,
        seconds: 0,
        latenciesMs: [],
        serverCpuMs: 0,
      };
      total.requests += measure.requests;
      total.errors += measure.errors;
      total.seconds += measure.seconds;
      total.serverCpuMs += measure.serverCpuMs;
      total.latenciesMs.push(...measure.latenciesMs);
      totals.set(rowName(scenario, target), total);
    }
  }
}

const rateOf = (name: string) => {
  const total = totals.get(name) as Measure;
  return total.requests / total.seconds;
};
console.log(
  `\nidemkit bench: ${CONNECTIONS} connections, ${ROUNDS} rounds x ${SECONDS} s per scenario, PostgreSQL fsync on, pool ${process.env.BENCH_POOL ?? 10}, Redis AOF everysec, DynamoDB on dynalite${AGAINST ? `; @against: ${process.env.BENCH_AGAINST_REF ?? AGAINST}` : ""}\n`,
);
const columns = ["scenario", "req/s", "p50 ms", "p99 ms", "server CPU ms/req", "errors", "vs baseline"];
printTable(
  AGAINST ? [...columns, "vs @against"] : columns,
  scenarios.flatMap((scenario) =>
    targets.map((target) => {
      const name = rowName(scenario, target);
      const baseline = `${scenario.baseline ?? "unprotected"}${target.label}`;
      const total = totals.get(name) as Measure;
      const sorted = total.latenciesMs.sort((a, b) => a - b);
      const rate = total.requests / total.seconds;
      const row = [
        name,
        rate.toFixed(0),
        percentile(sorted, 50).toFixed(2),
        percentile(sorted, 99).toFixed(2),
        (total.serverCpuMs / total.requests).toFixed(3),
        String(total.errors),
        `${(rate / rateOf(baseline)).toFixed(2)}x ${baseline}`,
      ];
      if (AGAINST && target.label === "")
        row.push(`${(rate / rateOf(rowName(scenario, targets[1] as Target))).toFixed(2)}x`);
      return row;
    }),
  ),
);

for (const target of targets) {
  target.agent.destroy();
  await target.server.stop();
}
await database.drop();
await postgresServer.stop();
await redisServer.stop();
await dynamoServer.stop();
