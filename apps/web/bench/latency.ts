/**
 * `npm run bench:latency`: what protection costs where users feel it, with PostgreSQL across a network. The bench
 * server reaches a real PostgreSQL (fsync on) through a TCP proxy that adds a round trip of 1, 2, 4 and 8 ms (both
 * of its sockets noDelay, as a router does no Nagle). Requests go one at a time, so a request's latency is its round
 * trips to the database plus CPU. Scenarios, in interleaved rounds:
 *
 *   unprotected            the order's writes in a plain transaction
 *   hand-written atomic    the same writes made exactly-once by hand (bench/server.ts handWrittenOrder): the floor
 *   hand-written, idemkit's statements  the same by hand with idemkit's claim, savepoint and completion, and none of
 *                          its engine (idemkitSqlOrder): what its statements' round trips are apart from its code
 *   atomic, first          idemkit's atomic mode on the same writes, a fresh key per request
 *   lease, first           idemkit's lease mode with drizzleStore, a fresh key per request
 *   no-op, unprotected     a procedure that does nothing
 *   replay from PostgreSQL a duplicate, answered by the store (the replay cache off), against the no-op
 *   pooled: …              the same through a PgBouncer in transaction mode beside the database, the proxy's round
 *                          trip in front of it, and postgres.js with `prepare: false`, as behind Supabase's or
 *                          Neon's pooler; against the unprotected order through it
 *
 * For each round trip it prints the p50 of each scenario and the round trips it adds over its baseline: its p50
 * less the baseline's, over the round trip measured through the proxy (`select 1`). The last column fits all the
 * round trips at once (the slope of the difference), which CPU time does not bend.
 * Environment: LATENCY_RTTS (1,2,4,8), LATENCY_REQUESTS per scenario per round (40), LATENCY_ROUNDS (2).
 */
import { Agent } from "node:http";
import { createDatabase, startLatencyProxy, startPgbouncer, startPostgres } from "@idemkit/testkit";
import postgres from "postgres";
import { openDatabase } from "../src/server/database";
import { percentile, post, printTable, startBenchServer } from "./shared";

const ROUND_TRIPS_MS = (process.env.LATENCY_RTTS ?? "1,2,4,8").split(",").map(Number);
const REQUESTS = Number(process.env.LATENCY_REQUESTS ?? 40);
const ROUNDS = Number(process.env.LATENCY_ROUNDS ?? 2);
const BODY = JSON.stringify({ json: { items: [{ sku: "tea", qty: 2 }] } });
const REPLAY_KEYS = Array.from({ length: 50 }, () => globalThis.crypto.randomUUID());

interface Scenario {
  name: string;
  path: string;
  key: (n: number) => string | undefined;
  baseline: string;
  /** Through PgBouncer in transaction mode, postgres.js with `prepare: false`, as a hosted app is. */
  pooled?: true;
}
const fresh = () => globalThis.crypto.randomUUID();
const scenarios: Scenario[] = [
  { name: "unprotected", path: "bench.placeOrderUnprotected", key: () => undefined, baseline: "unprotected" },
  { name: "hand-written atomic", path: "bench.placeOrderHandWritten", key: fresh, baseline: "unprotected" },
  {
    name: "hand-written, idemkit's statements",
    path: "bench.placeOrderIdemkitSql",
    key: fresh,
    baseline: "unprotected",
  },
  { name: "atomic, first", path: "bench.placeOrderAtomic", key: fresh, baseline: "unprotected" },
  { name: "lease, first", path: "bench.leaseOrderPostgres", key: fresh, baseline: "unprotected" },
  { name: "no-op, unprotected", path: "bench.noopUnprotected", key: () => undefined, baseline: "no-op, unprotected" },
  {
    name: "replay from PostgreSQL",
    path: "bench.placeOrderNoCache",
    key: (n) => REPLAY_KEYS[n % REPLAY_KEYS.length],
    baseline: "no-op, unprotected",
  },
  {
    name: "pooled: unprotected",
    path: "bench.placeOrderUnprotected",
    key: () => undefined,
    baseline: "pooled: unprotected",
    pooled: true,
  },
  {
    name: "pooled: atomic, first",
    path: "bench.placeOrderAtomic",
    key: fresh,
    baseline: "pooled: unprotected",
    pooled: true,
  },
  {
    name: "pooled: lease, first",
    path: "bench.leaseOrderPostgres",
    key: fresh,
    baseline: "pooled: unprotected",
    pooled: true,
  },
];

const postgresServer = await startPostgres({ durable: true });
const database = await createDatabase(postgresServer.url, "idemkit_latency");
const migrated = await openDatabase({ url: database.url, max: 1 });
await migrated.close();
const target = new URL(database.url);
const proxy = await startLatencyProxy({ host: target.hostname, port: Number(target.port) });
const proxiedUrl = proxy.urlFor(database.url);
const server = await startBenchServer(proxiedUrl);
// The same round trip to a PgBouncer beside the database, as a hosted app has to its pooler.
const bouncer = await startPgbouncer(postgresServer.url);
const pooledTarget = new URL(bouncer.pooled(database.url));
const pooledProxy = await startLatencyProxy({ host: pooledTarget.hostname, port: Number(pooledTarget.port) });
const pooledServer = await startBenchServer(pooledProxy.urlFor(pooledTarget.toString()), undefined, {
  BENCH_PREPARE: "false",
});
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const probe = postgres(proxiedUrl, { max: 1 });

const send = async (path: string, key: string | undefined, pooled = false) => {
  const base = pooled ? pooledServer.url : server.url;
  const answer = await post(`${base}/api/trpc/${path}`, { agent, user: "bench", key, body: BODY });
  if (answer.status !== 200) throw new Error(`${path} answered ${answer.status}: ${answer.body}`);
  return answer;
};

/** The latencies of `count` calls of `call`, one at a time, in ms. */
async function latenciesOf(count: number, call: (n: number) => Promise<unknown>): Promise<number[]> {
  const latenciesMs: number[] = [];
  for (let n = 0; n < count; n++) {
    const begin = performance.now();
    await call(n);
    latenciesMs.push(performance.now() - begin);
  }
  return latenciesMs;
}
const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

try {
  for (const key of REPLAY_KEYS) await send("bench.placeOrderNoCache", key);

  /** Per round trip: the measured round trip, and each scenario's latencies. */
  const results = new Map<number, { measuredMs: number; latencies: Map<string, number[]> }>();
  for (const roundTripMs of ROUND_TRIPS_MS) {
    proxy.setRoundTripMs(roundTripMs);
    pooledProxy.setRoundTripMs(roundTripMs);
    // Every pooled connection of the server warms up at this round trip before anything is measured.
    for (const scenario of scenarios)
      await latenciesOf(20, (n) => send(scenario.path, scenario.key(n), scenario.pooled));
    const latencies = new Map<string, number[]>(scenarios.map((scenario) => [scenario.name, []]));
    const measured: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      measured.push(...(await latenciesOf(REQUESTS, () => probe`select 1`)));
      for (const scenario of scenarios) {
        latencies
          .get(scenario.name)
          ?.push(...(await latenciesOf(REQUESTS, (n) => send(scenario.path, scenario.key(n), scenario.pooled))));
      }
    }
    results.set(roundTripMs, { measuredMs: median(measured), latencies });
  }

  const p50 = (roundTripMs: number, name: string) => median(results.get(roundTripMs)?.latencies.get(name) ?? []);
  const added = (roundTripMs: number, { name, baseline }: Scenario) =>
    p50(roundTripMs, name) - p50(roundTripMs, baseline);
  /** Least squares over the round trips: the added ms per ms of round trip, which is the round trips added. */
  function slope(scenario: Scenario): number {
    const points = ROUND_TRIPS_MS.map((ms) => [results.get(ms)?.measuredMs ?? ms, added(ms, scenario)] as const);
    const meanX = points.reduce((sum, [x]) => sum + x, 0) / points.length;
    const meanY = points.reduce((sum, [, y]) => sum + y, 0) / points.length;
    const covariance = points.reduce((sum, [x, y]) => sum + (x - meanX) * (y - meanY), 0);
    const variance = points.reduce((sum, [x]) => sum + (x - meanX) ** 2, 0);
    return covariance / variance;
  }

  console.log(
    `\nidemkit bench:latency: PostgreSQL fsync on, behind a proxy adding ${ROUND_TRIPS_MS.join(", ")} ms round trips ` +
      `(measured ${ROUND_TRIPS_MS.map((ms) => results.get(ms)?.measuredMs.toFixed(2)).join(", ")} ms with select 1); ` +
      `one request at a time, ${ROUNDS} rounds x ${REQUESTS} requests per scenario\n`,
  );
  printTable(
    [
      "scenario",
      ...ROUND_TRIPS_MS.map((ms) => `p50 @${ms}ms`),
      ...ROUND_TRIPS_MS.map((ms) => `+RT @${ms}ms`),
      "+RT (fit)",
      "over",
    ],
    scenarios.map((scenario) => [
      scenario.name,
      ...ROUND_TRIPS_MS.map((ms) => p50(ms, scenario.name).toFixed(2)),
      ...ROUND_TRIPS_MS.map((ms) => (added(ms, scenario) / (results.get(ms)?.measuredMs ?? ms)).toFixed(2)),
      scenario.name === scenario.baseline ? "" : slope(scenario).toFixed(2),
      scenario.baseline,
    ]),
  );
} finally {
  // Also when a scenario fails: nothing of the bench is left running.
  await probe.end({ timeout: 1 });
  agent.destroy();
  await server.stop();
  await pooledServer.stop();
  await proxy.close();
  await pooledProxy.close();
  await bouncer.stop();
  await database.drop();
  await postgresServer.stop();
}
