/**
 * `npm run bench:latency`: what protection costs where users feel it, in round trips to the database, on each driver.
 * The bench server reaches a real PostgreSQL (fsync on) through a TCP proxy that adds a round trip (4 ms) and counts
 * the server's flights: what it sends before an answer reaches it, one round trip each however many statements it
 * holds (see the testkit's latency proxy). So the round trips are counted, not fitted from timings: exact, whatever
 * the CPU does. Requests go one at a time. For each driver under Drizzle (postgres.js 3 with its defaults, what
 * create-t3-app installs; postgres.js 4; node-postgres) and each path (direct; through PgBouncer in transaction mode,
 * the proxy in front of it, postgres.js with `prepare: false`, as behind Supabase's or Neon's pooler), per scenario:
 *
 *   unprotected            the order's writes in a plain transaction
 *   hand-written atomic    the same writes made exactly-once by hand (bench/server.ts handWrittenOrder): the floor.
 *                          Direct only: its statements are prepared by name, which the pooler loses
 *   hand-written, idemkit's statements  the same by hand with idemkit's claim, savepoint and completion, and none of
 *                          its engine (idemkitSqlOrder)
 *   atomic, first          idemkit's atomic mode on the same writes, a fresh key per request
 *   lease, first           idemkit's lease mode with drizzleStore, a fresh key per request
 *   no-op, unprotected     a procedure that does nothing
 *   replay from PostgreSQL a duplicate, answered by the store (the replay cache off), against the no-op
 *
 * It prints each scenario's round trips per request, those it adds over its baseline, and its p50.
 * Environment: LATENCY_RTT_MS (4), LATENCY_REQUESTS per scenario (20), LATENCY_DRIVERS (all three, comma-separated).
 */
import { Agent } from "node:http";
import { createDatabase, startLatencyProxy, startPgbouncer, startPostgres } from "@idemkit/testkit";
import { openDatabase } from "../src/server/database";
import { percentile, post, printTable, startBenchServer } from "./shared";

const ROUND_TRIP_MS = Number(process.env.LATENCY_RTT_MS ?? 4);
const REQUESTS = Number(process.env.LATENCY_REQUESTS ?? 20);
const DRIVERS = (process.env.LATENCY_DRIVERS ?? "postgres.js 3,postgres.js 4,node-postgres").split(",");
const BODY = JSON.stringify({ json: { items: [{ sku: "tea", qty: 2 }] } });
const REPLAY_KEYS = Array.from({ length: 50 }, () => globalThis.crypto.randomUUID());

interface Scenario {
  name: string;
  path: string;
  key: (n: number) => string | undefined;
  baseline: string;
  /** Sent only on a direct connection. */
  direct?: true;
}
const fresh = () => globalThis.crypto.randomUUID();
const scenarios: Scenario[] = [
  { name: "unprotected", path: "bench.placeOrderUnprotected", key: () => undefined, baseline: "unprotected" },
  {
    name: "hand-written atomic",
    path: "bench.placeOrderHandWritten",
    key: fresh,
    baseline: "unprotected",
    direct: true,
  },
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
];

const postgresServer = await startPostgres({ durable: true });
const database = await createDatabase(postgresServer.url, "idemkit_latency");
const migrated = await openDatabase({ url: database.url, max: 1 });
await migrated.close();
const target = new URL(database.url);
const bouncer = await startPgbouncer(postgresServer.url);
const pooledTarget = new URL(bouncer.pooled(database.url));
const paths = [
  {
    name: "direct",
    proxy: await startLatencyProxy({ host: target.hostname, port: Number(target.port) }, ROUND_TRIP_MS),
    url: database.url,
    env: {},
  },
  {
    name: "PgBouncer",
    proxy: await startLatencyProxy({ host: pooledTarget.hostname, port: Number(pooledTarget.port) }, ROUND_TRIP_MS),
    url: pooledTarget.toString(),
    env: { BENCH_PREPARE: "false" },
  },
];
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** What one scenario measured: round trips per request, and its latencies. */
interface Measured {
  roundTrips: number;
  latenciesMs: number[];
}

try {
  const rows: string[][] = [];
  for (const driver of DRIVERS) {
    for (const path of paths) {
      const server = await startBenchServer(path.proxy.urlFor(path.url), undefined, {
        ...path.env,
        BENCH_DRIVER: driver,
        BENCH_POOL: "2",
      });
      try {
        const send = async (route: string, key: string | undefined) => {
          const answer = await post(`${server.url}/api/trpc/${route}`, { agent, user: "bench", key, body: BODY });
          if (answer.status !== 200) throw new Error(`${route} answered ${answer.status}: ${answer.body}`);
        };
        const sent = scenarios.filter((scenario) => !scenario.direct || path.name === "direct");
        // Every statement is prepared on every connection, and every replay key stored, before anything is counted.
        // Twenty of each: atomic mode reads a key before claiming it once most of a procedure's recent misses were
        // replays (a moving share, by sixteenths), which ten replays after the fifty first executions do not reach.
        for (const key of REPLAY_KEYS) await send("bench.placeOrderNoCache", key);
        for (const scenario of sent) for (let n = 0; n < 20; n++) await send(scenario.path, scenario.key(n));
        const measured = new Map<string, Measured>();
        for (const scenario of sent) {
          const latenciesMs: number[] = [];
          const before = path.proxy.flights();
          for (let n = 0; n < REQUESTS; n++) {
            const begin = performance.now();
            await send(scenario.path, scenario.key(n));
            latenciesMs.push(performance.now() - begin);
          }
          measured.set(scenario.name, { roundTrips: (path.proxy.flights() - before) / REQUESTS, latenciesMs });
        }
        for (const scenario of sent) {
          const own = measured.get(scenario.name) as Measured;
          const baseline = measured.get(scenario.baseline) as Measured;
          rows.push([
            driver,
            path.name,
            scenario.name,
            own.roundTrips.toFixed(2),
            scenario.name === scenario.baseline ? "" : `+${(own.roundTrips - baseline.roundTrips).toFixed(2)}`,
            scenario.name === scenario.baseline ? "" : scenario.baseline,
            percentile(
              [...own.latenciesMs].sort((a, b) => a - b),
              50,
            ).toFixed(1),
          ]);
        }
      } finally {
        await server.stop();
      }
    }
  }
  console.log(
    `\nidemkit bench:latency: PostgreSQL fsync on, behind a proxy adding ${ROUND_TRIP_MS} ms round trips and ` +
      `counting them; one request at a time, ${REQUESTS} requests per scenario, pools of 2\n`,
  );
  printTable(["driver", "path", "scenario", "round trips", "added", "over", `p50 ms @${ROUND_TRIP_MS}ms`], rows);
} finally {
  // Also when a scenario fails: nothing of the bench is left running.
  agent.destroy();
  for (const path of paths) await path.proxy.close();
  await bouncer.stop();
  await database.drop();
  await postgresServer.stop();
}
