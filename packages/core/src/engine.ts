/**
 * The engine runs one protected request: claim -> execute -> store or release. It is the only place that
 * decides; stores just answer. Adapters (the tRPC middleware, the Fetch adapter) give it the request's identity
 * and fingerprint, and an `execute` callback that runs the real work and says what to store.
 *
 * Two modes, each in its own file:
 * - atomic (default when the store offers it, `engine/atomic-run.ts`): claim, work and stored response share one
 *   database transaction. Exactly-once for database effects, and no extra commit per request.
 * - lease (`engine/lease-run.ts`): the claim is committed on its own with a lease and a fence, the work runs, the
 *   response is stored under that fence. For work whose effects leave the database: pass its key downstream.
 *
 * Completed records never change until they expire, so they are cached in process (`engine/replay-cache.ts`): a
 * replay that hits the cache costs no database round trip. What every run answers with is `engine/answers.ts`;
 * how a duplicate waits, `engine/waiting.ts` and `engine/single-flight.ts`.
 */

import { MAX_TIMER_MS } from "./deadline.js";
import { answersOf, reportingTo } from "./engine/answers.js";
import { atomicRun } from "./engine/atomic-run.js";
import { leaseRun } from "./engine/lease-run.js";
import { limitsOf } from "./engine/limits.js";
import { cacheKey, ReplayCache } from "./engine/replay-cache.js";
import { settlingOf } from "./engine/settling.js";
import { IN_PROGRESS, SingleFlight } from "./engine/single-flight.js";
import { telemetryOf } from "./engine/telemetry.js";
import {
  type Execution,
  type IdempotencyEngineOptions,
  IdempotencyMode,
  type IdempotentRequest,
  type RunResult,
  type Settlement,
} from "./engine/types.js";
import { UnstorableAnswer } from "./engine/unstorable.js";
import { Patience } from "./engine/waiting.js";
import { checkIdentity, unkeptTextReason } from "./key.js";
import { checkedNumber, type NumericRule } from "./numeric-options.js";
import { onceLog, withoutOperatorDetail } from "./operator-detail.js";
import { DEFAULT_WAIT_MS } from "./store.js";

const HOUR_MS = 3_600_000;

/**
 * What each of the engine's numeric options may be. A record's time to live and a lease are written to the store,
 * and one that never ends would hold its key for good, so they are finite; the bounds on waiting may be turned off.
 */
const NUMERIC_RULES = {
  ttlMs: { min: 1 },
  leaseMs: { min: 1, max: MAX_TIMER_MS },
  maxHoldMs: { unlimited: true },
  busyRetryAfterMs: {},
  storeTimeoutMs: { min: 1, unlimited: true },
  transactionTimeoutMs: { min: 1, unlimited: true },
  procedureTimeoutMs: { min: 1, unlimited: true },
  replayCacheSize: { whole: true },
} satisfies Record<string, NumericRule>;

/** Checks the engine's numeric options once, as it is built: a wrong one fails the app's start, not its calls. */
function checkedNumbers(values: Record<keyof typeof NUMERIC_RULES, number>): void {
  for (const [name, rule] of Object.entries(NUMERIC_RULES)) {
    checkedNumber("idemkit", name, values[name as keyof typeof NUMERIC_RULES], rule);
  }
}

/** Builds the engine once per protected endpoint; `run` is called per request. */
export function createIdempotencyEngine<Tx>({
  store,
  mode = store.atomic ? IdempotencyMode.ATOMIC : IdempotencyMode.LEASE,
  ttlMs = 24 * HOUR_MS,
  leaseMs = 60_000,
  maxHoldMs = 15 * 60_000,
  busyRetryAfterMs = 1_000,
  storeTimeoutMs = 5_000,
  transactionTimeoutMs = 30_000,
  procedureTimeoutMs = 30_000,
  waitUntil,
  replayCacheSize = 10_000,
  now = Date.now,
  onEvent,
  telemetry: telemetryOptions,
  limits,
  redact,
}: IdempotencyEngineOptions<Tx>) {
  const bounds = {
    ttlMs,
    leaseMs,
    maxHoldMs,
    busyRetryAfterMs,
    storeTimeoutMs,
    transactionTimeoutMs,
    procedureTimeoutMs,
  };
  checkedNumbers({ ...bounds, replayCacheSize });
  const atomic = store.atomic;
  if (mode === IdempotencyMode.ATOMIC && !atomic) {
    throw new TypeError("This store has no atomic mode; use mode: 'lease'.");
  }
  if (mode === IdempotencyMode.LEASE && typeof store.renew !== "function") {
    throw new TypeError("This store has no renew(): lease mode renews a running call's lease, so it needs one.");
  }
  // What is wrong with this endpoint, for its operator: each detail said once.
  const log = onceLog();
  const waitMs = atomic?.waitMs ?? DEFAULT_WAIT_MS;
  const settings = { store, ...bounds, waitMs, waitUntil, now, log, cache: new ReplayCache(replayCacheSize) };
  const { cache } = settings;
  const telemetry = telemetryOf(mode, telemetryOptions);
  const admission = limitsOf(limits, now);
  const answers = answersOf(settings, reportingTo(onEvent, telemetry.event));
  const { answerExisting, conflict } = answers;
  const runLease = leaseRun(settings, answers);
  const runAtomic = atomic && mode === IdempotencyMode.ATOMIC ? atomicRun(settings, answers, atomic) : undefined;
  const flights = new SingleFlight();

  return {
    /** The mode requests run in. */
    mode,
    /**
     * Runs `execute` at most once for this request's (scope, path, key), or replays what the first run stored.
     * Throws an {@link IdempotencyError} for a conflict, a mismatch, a lost lease or an unavailable store.
     */
    run<T>(
      request: IdempotentRequest,
      execute: (execution: Execution<Tx>) => Promise<Settlement<T>>,
    ): Promise<RunResult<T>> {
      return telemetry
        .observed<T>(request, (call) =>
          runOnce(request, (execution) => call.procedure(() => settled(request, execute, execution)), call.waited),
        )
        .catch((error: unknown) => {
          throw withoutOperatorDetail(error, log);
        });
    },
  };

  /**
   * What the work came to, with what is kept of its answer (redacted before the store or the cache sees it). A
   * `redact` that fails is a failure to answer, as an adapter's (`UnstorableAnswer`): the run then never releases
   * the key for the work to run again.
   */
  async function settled<T>(
    request: IdempotentRequest,
    execute: (execution: Execution<Tx>) => Promise<Settlement<T>>,
    execution: Execution<Tx>,
  ): Promise<Settlement<T>> {
    const settlement = await execute(execution);
    if (!redact || settlement.response === undefined) return settlement;
    const id = { scope: request.scope, path: request.path, key: request.key };
    const { status, body } = settlement.response;
    try {
      const kept = redact(body, id);
      if (typeof kept !== "string") throw new TypeError(`redact returned ${typeof kept}, not the body to keep.`);
      const unkept = unkeptTextReason(kept);
      if (unkept) throw new TypeError(`redact returned text that ${unkept}.`);
      return { ...settlement, response: { status, body: kept } };
    } catch (error) {
      throw new UnstorableAnswer(error);
    }
  }

  async function runOnce<T>(
    request: IdempotentRequest,
    execute: (execution: Execution<Tx>) => Promise<Settlement<T>>,
    waited: (ms: number) => void,
  ): Promise<RunResult<T>> {
    checkIdentity(request);
    const cached = cache.get(request, now());
    if (cached) return answerExisting(request, cached, 0);
    const admitted = admission.admit(request, busyRetryAfterMs);
    try {
      const result = await runStored(request, execute, waited);
      admitted();
      return result;
    } catch (error) {
      // A call answered while its work goes on keeps its place under the limits until that work is done.
      const settling = settlingOf(error);
      if (settling) void settling.then(admitted);
      else admitted();
      throw error;
    }
  }

  /** A call the replay cache had no answer for: in lease mode, or in atomic mode one at a time per key here. */
  async function runStored<T>(
    request: IdempotentRequest,
    execute: (execution: Execution<Tx>) => Promise<Settlement<T>>,
    waited: (ms: number) => void,
  ): Promise<RunResult<T>> {
    if (!runAtomic) return runLease(request, execute);
    const patience = new Patience(now(), waitMs);
    let heldElsewhere = false;
    try {
      for (;;) {
        // A duplicate of a call running in this process waits for it in memory, then replays what it stored
        // (or claims, if it stored nothing): no connection, no statement.
        const name = cacheKey(request);
        const leader = flights.leaderOf(name);
        if (!leader) return await flights.lead(name, runAtomic(request, execute, patience, heldElsewhere));
        const outcome = await patience
          .waitFor((deadline) => deadline.race(leader))
          .catch(() => conflict(request, busyRetryAfterMs));
        const stored = cache.get(request, now());
        if (stored) return answerExisting(request, stored, 0);
        // The leader gave up on a call that holds the key elsewhere: this one waits on with what it has left.
        heldElsewhere = outcome === IN_PROGRESS;
      }
    } finally {
      patience.end();
      waited(patience.waitedMs);
    }
  }
}

/** The engine `createIdempotencyEngine` makes: `run` one request, and the mode it runs in. */
export type IdempotencyEngine<Tx> = ReturnType<typeof createIdempotencyEngine<Tx>>;
