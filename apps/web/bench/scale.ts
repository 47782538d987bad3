/**
 * `npm run bench:scale`: idemkit on several instances of one app sharing one PostgreSQL (fsync on), as a load
 * balancer spreads requests over them, in two phases:
 *
 *   load   clients place orders through the instances of bench/server.ts in turn. A share of the actions is sent as
 *          duplicates, the same key and body to 2-3 instances, either at the same moment ("concurrent") or once the
 *          first copy was answered ("late"): the retries of a client that lost an answer, landing anywhere.
 *   storm  200 duplicates of one slow call (bench.slowOrder: an order's writes, then 2 s inside its transaction)
 *          sent at the same moment across the instances, while a steady stream of unrelated orders (other users,
 *          fresh keys) measures what a crowd of waiting duplicates costs everyone else. Rounds with and without a
 *          storm alternate, so machine noise hits both alike.
 *
 * It prints throughput, p50 and p99 per request, answers by status and replays for each kind of request. Every
 * action is its own user (`uid` cookie), so the orders table tells afterwards how many times each one took effect:
 * the script exits 1 if any took effect more than once, or was answered 200 with an order that is not in the
 * database. Load clients retry as idempotencyLink does, with its policy from @idemkit/core (the same key after no
 * answer, a 5xx or a 409, at most 5 attempts, honouring Retry-After); the storm's duplicates and the stream's orders
 * are sent once, as their first answer is what is measured.
 * Environment: DATABASE_URL (else a throwaway server), BENCH_INSTANCES (3), BENCH_CONNECTIONS clients (16),
 * BENCH_SECONDS of load (10), BENCH_DUPLICATED share of actions (0.3), BENCH_POOL connections per instance (10).
 */
import { Agent } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { nextStep, Resend } from "@idemkit/core";
import { nextRetryDelayMs } from "@idemkit/core/client";
import { createDatabase, startPostgres } from "@idemkit/testkit";
import postgres from "postgres";
import { openDatabase } from "../src/server/database";
import { type BenchServer, percentile, post, printTable, startBenchServer } from "./shared";

const INSTANCES = Number(process.env.BENCH_INSTANCES ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const DUPLICATED = Number(process.env.BENCH_DUPLICATED ?? 0.3);
/** Read by server.ts from the same variable; printed here. */
const POOL = Number(process.env.BENCH_POOL ?? 10);
const STORM_DUPLICATES = 200;
/** Well within idemkit's 5 s wait for a running duplicate, so the storm should be answered with replays. */
const STORM_HOLD_MS = 2_000;
const STORM_ROUNDS = 3;
const STREAM_PER_SECOND = 50;
const CART = [
  { sku: "tea", qty: 2 },
  { sku: "mug", qty: 1 },
];
const ORDER = JSON.stringify({ json: { items: CART } });
const SLOW_ORDER = JSON.stringify({ json: { items: CART, holdMs: STORM_HOLD_MS } });

type Kind =
  | "single"
  | "duplicated, concurrent"
  | "duplicated, late"
  | "unrelated, no storm"
  | "unrelated, during storm"
  | "storm duplicates";

interface Sent {
  ms: number;
  /** "none" when the request failed without an answer (a connection reset). */
  status: number | "none";
  replayed: boolean;
  retryAfterMs: number | undefined;
  /** The order a 200 names. */
  orderId: number | undefined;
}

/** One user action: one user, one key, and every request sent for it. */
interface Action {
  kind: Kind;
  user: string;
  key: string;
  sent: Sent[];
}

/** Every action of the run, warm-up included, for the check against the orders table. */
const actions: Action[] = [];

function newAction(kind: Kind): Action {
  const action = {
    kind,
    user: `scale${globalThis.crypto.randomUUID().replaceAll("-", "")}`,
    key: globalThis.crypto.randomUUID(),
    sent: [],
  };
  actions.push(action);
  return action;
}

// Unlimited sockets: concurrency is what the clients make it, and concurrent duplicates must not queue here.
const agent = new Agent({ keepAlive: true });

async function send(action: Action, url: string, body = ORDER): Promise<Sent> {
  const begin = performance.now();
  const answer = await post(url, { agent, user: action.user, key: action.key, body }).catch(() => undefined);
  const sent: Sent = {
    ms: performance.now() - begin,
    status: answer?.status ?? "none",
    replayed: answer?.replayed ?? false,
    retryAfterMs: answer?.retryAfterMs,
    orderId: answer?.status === 200 ? orderIdIn(answer.body) : undefined,
  };
  action.sent.push(sent);
  return sent;
}

/** The order a 200 names; undefined when its body names none (counted as lost). */
function orderIdIn(body: string): number | undefined {
  try {
    return (JSON.parse(body) as { result?: { data?: { json?: { orderId?: number } } } }).result?.data?.json?.orderId;
  } catch {
    return undefined;
  }
}

/** Sends one copy of `action` to `url` until it is answered with something not worth retrying, or retries run out. */
async function sendRetrying(action: Action, url: string): Promise<void> {
  const startedAtMs = performance.now();
  for (let attempt = 1; ; attempt++) {
    const { status, replayed, retryAfterMs } = await send(action, url);
    const seen = { status: status === "none" ? undefined : status, retryAfter: retryAfterMs !== undefined, replayed };
    if (nextStep(seen).resend !== Resend.RETRY) return;
    const delayMs = nextRetryDelayMs({ attempt, startedAtMs, nowMs: performance.now(), retryAfterMs });
    if (delayMs === undefined) return;
    await sleep(delayMs);
  }
}

/** CONNECTIONS clients, each placing one action after another for `seconds`. */
async function load(placeOrderUrls: string[], seconds: number) {
  const placed: Action[] = [];
  let turn = 0;
  const startedAt = performance.now();
  const deadline = startedAt + seconds * 1_000;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (performance.now() < deadline) {
        const copies = Math.random() < DUPLICATED ? 2 + Math.floor(Math.random() * 2) : 1;
        const late = copies > 1 && Math.random() < 0.5;
        const action = newAction(copies === 1 ? "single" : late ? "duplicated, late" : "duplicated, concurrent");
        // Consecutive turns: the copies land on different instances, while there are enough of them.
        const urls = Array.from({ length: copies }, () => placeOrderUrls[turn++ % placeOrderUrls.length] as string);
        const [first, ...others] = urls;
        if (late && first) {
          await sendRetrying(action, first);
          await Promise.all(others.map((url) => sendRetrying(action, url)));
        } else {
          await Promise.all(urls.map((url) => sendRetrying(action, url)));
        }
        placed.push(action);
      }
    }),
  );
  return { placed, seconds: (performance.now() - startedAt) / 1_000 };
}

/** Unrelated first executions at STREAM_PER_SECOND over the instances in turn, each sent once, until `over()`. */
async function stream(kind: Kind, placeOrderUrls: string[], over: () => boolean): Promise<Action[]> {
  const streamed: Action[] = [];
  const answered: Promise<Sent>[] = [];
  const startedAt = performance.now();
  for (let n = 0; !over(); n++) {
    const action = newAction(kind);
    streamed.push(action);
    answered.push(send(action, placeOrderUrls[n % placeOrderUrls.length] as string));
    // Paced by the clock, not by the answers: a stream that slowed down with the server would hide its slowness.
    await sleep(Math.max(0, startedAt + ((n + 1) * 1_000) / STREAM_PER_SECOND - performance.now()));
  }
  await Promise.all(answered);
  return streamed;
}

/** STORM_DUPLICATES copies of one slow call, same user and key, sent at the same moment across the instances. */
async function storm(slowOrderUrls: string[]): Promise<Action> {
  const action = newAction("storm duplicates");
  await Promise.all(
    Array.from({ length: STORM_DUPLICATES }, (_, i) =>
      send(action, slowOrderUrls[i % slowOrderUrls.length] as string, SLOW_ORDER),
    ),
  );
  return action;
}

/** The ids of each user's orders: every action is its own user, so these are the action's effects. */
async function ordersByUser(databaseUrl: string): Promise<Map<string, number[]>> {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ user_id: string; ids: number[] }[]>`
      select user_id, array_agg(id order by id) as ids from orders group by user_id`;
    return new Map(rows.map((row) => [row.user_id, row.ids]));
  } finally {
    await sql.end();
  }
}

/** How many orders the action placed, and whether an answer 200 named an order that is not in the database. */
type Effects = (action: Action) => { orders: number; lost: boolean };

function effectsOf(ordersOf: Map<string, number[]>): Effects {
  return (action) => {
    const orders = ordersOf.get(action.user) ?? [];
    const lost = action.sent.some(
      (sent) => sent.status === 200 && (sent.orderId === undefined || !orders.includes(sent.orderId)),
    );
    return { orders: orders.length, lost };
  };
}

const COLUMNS = ["", "actions", "requests", "p50 ms", "p99 ms", "answers", "replayed", "effects > 1", "lost"];

/** A table row: the requests' latency and answers, and the actions checked against the database. */
function summary(label: string, list: Action[], effects: Effects): string[] {
  const sent = list.flatMap((action) => action.sent);
  const sortedMs = sent.map((request) => request.ms).sort((a, b) => a - b);
  const byStatus = new Map<number | "none", number>();
  for (const { status } of sent) byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  return [
    label,
    String(list.length),
    String(sent.length),
    percentile(sortedMs, 50).toFixed(1),
    percentile(sortedMs, 99).toFixed(1),
    [...byStatus]
      .sort(([a], [b]) => String(a).localeCompare(String(b)))
      .map(([status, count]) => `${status}: ${count}`)
      .join(", "),
    String(sent.filter((request) => request.replayed).length),
    String(list.filter((action) => effects(action).orders > 1).length),
    String(list.filter((action) => effects(action).lost).length),
  ];
}

const ofKind = (list: Action[], kind: Kind) => list.filter((action) => action.kind === kind);

const postgresServer = await startPostgres({ durable: true });
const database = await createDatabase(postgresServer.url, "idemkit_bench");
const servers: BenchServer[] = [];
let broken = false;
try {
  // Migrated once here, so the instances start on a ready schema.
  const migrated = await openDatabase({ url: database.url, max: 1 });
  await migrated.close();
  // Settled rather than all: the instances that did start are stopped below when another one failed to.
  const starting = await Promise.allSettled(
    Array.from({ length: INSTANCES }, async () => servers.push(await startBenchServer(database.url))),
  );
  for (const result of starting) if (result.status === "rejected") throw result.reason;
  const placeOrderUrls = servers.map((server) => `${server.url}/api/trpc/checkout.placeOrder`);
  const slowOrderUrls = servers.map((server) => `${server.url}/api/trpc/bench.slowOrder`);

  await load(placeOrderUrls, 1); // warm-up: checked against the database, not measured
  const loaded = await load(placeOrderUrls, SECONDS);

  const stormed: Action[] = [];
  const streamed: Action[] = [];
  const stormMs: number[] = [];
  for (let round = 1; round <= STORM_ROUNDS; round++) {
    const startedAt = performance.now();
    let stormOver = false;
    const [duplicates, during] = await Promise.all([
      storm(slowOrderUrls).finally(() => {
        stormOver = true;
      }),
      stream("unrelated, during storm", placeOrderUrls, () => stormOver),
    ]);
    const lastedMs = performance.now() - startedAt;
    stormed.push(duplicates);
    stormMs.push(lastedMs);
    const quietUntil = performance.now() + lastedMs;
    const quiet = await stream("unrelated, no storm", placeOrderUrls, () => performance.now() >= quietUntil);
    streamed.push(...during, ...quiet);
  }

  const effects = effectsOf(await ordersByUser(database.url));
  const requests = loaded.placed.reduce((sum, action) => sum + action.sent.length, 0);
  console.log(
    `\nidemkit bench:scale: ${INSTANCES} instances (pool ${POOL} each) on one PostgreSQL (fsync on), ` +
      `${CONNECTIONS} clients for ${SECONDS} s, ${Math.round(DUPLICATED * 100)}% of actions sent to 2-3 instances\n`,
  );
  console.log(
    `throughput: ${(loaded.placed.length / loaded.seconds).toFixed(0)} actions/s, ` +
      `${(requests / loaded.seconds).toFixed(0)} requests/s\n`,
  );
  const loadKinds = ["single", "duplicated, concurrent", "duplicated, late"] as const;
  printTable(COLUMNS, [
    ...loadKinds.map((kind) => summary(kind, ofKind(loaded.placed, kind), effects)),
    summary("all", loaded.placed, effects),
  ]);

  console.log(
    `\nstorm: ${STORM_DUPLICATES} duplicates of one bench.slowOrder (${STORM_HOLD_MS} ms in its transaction) at ` +
      `the same moment over ${INSTANCES} instances, ${STORM_ROUNDS} rounds alternating with rounds without; ` +
      `unrelated orders at ${STREAM_PER_SECOND}/s throughout\n`,
  );
  const streamKinds = ["unrelated, no storm", "unrelated, during storm"] as const;
  printTable(COLUMNS, [
    ...streamKinds.map((kind) => summary(kind, ofKind(streamed, kind), effects)),
    summary("storm duplicates", stormed, effects),
  ]);
  console.log();
  printTable(
    ["storm", "lasted ms", "orders placed", "executed", "replayed", "409", "other answers"],
    stormed.map((action, i) => {
      const count = (answered: (sent: Sent) => boolean) => String(action.sent.filter(answered).length);
      return [
        String(i + 1),
        (stormMs[i] ?? 0).toFixed(0),
        String(effects(action).orders),
        count((sent) => sent.status === 200 && !sent.replayed),
        count((sent) => sent.status === 200 && sent.replayed),
        count((sent) => sent.status === 409),
        count((sent) => sent.status !== 200 && sent.status !== 409),
      ];
    }),
  );

  const twice = actions.filter((action) => effects(action).orders > 1).length;
  const lost = actions.filter((action) => effects(action).lost).length;
  console.log(
    `\n${actions.length} actions in all, warm-up included: ${twice} took effect more than once, ${lost} answered 200 ` +
      "with an order that is not in the database",
  );
  broken = twice > 0 || lost > 0;
} finally {
  agent.destroy();
  await Promise.all(servers.map((server) => server.stop()));
  await database.drop();
  await postgresServer.stop();
}
if (broken) process.exitCode = 1;
