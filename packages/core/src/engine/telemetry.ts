/**
 * What an operator sees of each protected call, without a dependency of their own: OpenTelemetry through
 * `@opentelemetry/api` (a no-op until the app registers an SDK, or hands the engine its providers), and
 * `node:diagnostics_channel` for subscribers that want neither. Per call: a span, its outcome counted, its duration
 * measured, the calls in flight, and the share of answers that were replays (the hit rate: how often clients
 * repeat themselves). Observers never change an outcome: whatever they throw is swallowed.
 *
 * | name                    | kind            | attributes                                |
 * |-------------------------|-----------------|-------------------------------------------|
 * | `idemkit.calls`         | counter         | outcome, mode, path                       |
 * | `idemkit.calls.active`  | up-down counter | mode, path                                |
 * | `idemkit.call.duration` | histogram (s)   | outcome, mode, path                       |
 * | `idemkit.replay.ratio`  | gauge           | path: replayed / (executed + replayed)    |
 *
 * A path is named (in its series, and in its span's name) while its meter provider knows fewer than
 * `MAX_SERIES_VALUES` paths; the later ones share one series, marked `otel.metric.overflow`, and their spans are
 * named `idemkit` (a span's `idemkit.path` attribute is its path all the same).
 *
 * Channels: `idemkit:call` (one message per call, when it ends) and `idemkit:event` (each engine decision). Neither
 * channels nor spans carry what the app's own data may hold (a scope, an error's message) unless `include` says so.
 */
import {
  type Attributes,
  type Counter,
  context,
  type Histogram,
  metrics,
  type Span,
  SpanStatusCode,
  trace,
  type UpDownCounter,
} from "@opentelemetry/api";
import { IdempotencyErrorCode, isIdempotencyError } from "../errors.js";
import {
  channelNamed,
  instrumentsPer,
  OVERFLOWED,
  publishTo,
  quietly,
  type SeriesLimit,
  summaryOf,
} from "../observing.js";
import { type CallMessage, CallOutcome, type EventMessage, resolvedOutcome, thrownOutcome } from "./call-outcome.js";
import { settlingOf } from "./settling.js";
import type {
  IdempotencyEvent,
  IdempotencyMode,
  IdempotentRequest,
  RunResult,
  Settlement,
  TelemetryOptions,
} from "./types.js";

/** What the engine tells the telemetry of one call while it runs. */
export interface ObservedCall<T> {
  /** Runs the procedure, timing it; what it settles with tells a stored answer from a released one. */
  procedure(work: () => Promise<Settlement<T>>): Promise<Settlement<T>>;
  /** Adds the time spent waiting for another call with the same key, in ms. */
  waited(ms: number): void;
}

const UNOBSERVED: ObservedCall<never> = { procedure: (work) => work(), waited: () => {} };

const INSTRUMENTATION = "@idemkit/core";

const channels = { call: channelNamed("idemkit:call"), event: channelNamed("idemkit:event") };

/** The tally's slot for the paths past the limit. */
const OVERFLOW = Symbol("overflow");

/** One meter's instruments, made once per provider: instruments of a no-op meter stay no-ops once an SDK is set. */
interface Instruments {
  calls: Counter;
  active: UpDownCounter;
  duration: Histogram;
  /** The paths named in this provider's series and in span names (the engines reporting to it share them). */
  paths: SeriesLimit;
  /** Per named path, and for the rest together: answers executed and replayed, for the hit rate. */
  tally: Map<string | typeof OVERFLOW, { executed: number; replayed: number }>;
}
const instrumentsOf = instrumentsPer(INSTRUMENTATION, (meter, bounded): Instruments => {
  const tally: Instruments["tally"] = new Map();
  const ratio = meter.createObservableGauge("idemkit.replay.ratio", {
    description: "Of the calls answered so far, the share answered with a stored answer (replays), per path.",
  });
  ratio.addCallback((result) => {
    for (const [path, { executed, replayed }] of tally) {
      const attributes = path === OVERFLOW ? OVERFLOWED : { "idemkit.path": path };
      if (executed + replayed > 0) result.observe(replayed / (executed + replayed), attributes);
    }
  });
  return {
    calls: meter.createCounter("idemkit.calls", { description: "Protected calls, by how they ended.", unit: "{call}" }),
    active: meter.createUpDownCounter("idemkit.calls.active", {
      description: "Protected calls in flight.",
      unit: "{call}",
    }),
    duration: meter.createHistogram("idemkit.call.duration", {
      description: "How long a protected call took, waiting and store included.",
      unit: "s",
    }),
    paths: bounded(
      "idemkit.path",
      "A path names a route: an endpoint named by its URL (a `path` that returns the request's URL, or " +
        '`engine.run` given it) puts ids in it. Name its route instead (`path: () => "/api/orders/[id]/pay"`). ' +
        "The spans of the other paths are named `idemkit`.",
    ),
    tally,
  };
});

/** The answers counted for `slot`: a named path, or the rest together. */
function tallied(tally: Instruments["tally"], slot: string | typeof OVERFLOW): { executed: number; replayed: number } {
  const counts = tally.get(slot) ?? { executed: 0, replayed: 0 };
  tally.set(slot, counts);
  return counts;
}

/**
 * The engine's telemetry, for one engine: `observed(request, run)` wraps one call, `event(e)` publishes a decision.
 * `false` turns both off.
 */
export function telemetryOf(mode: IdempotencyMode, options: TelemetryOptions | false | undefined) {
  const off = options === false;
  const tracerProvider = () => (off ? undefined : (options?.tracerProvider ?? trace.getTracerProvider()));
  const meterProvider = () => (off ? undefined : (options?.meterProvider ?? metrics.getMeterProvider()));
  const { include = {} } = options || {};
  const withErrorMessages = include.errorMessages === true;

  return {
    event(event: IdempotencyEvent): void {
      if (off) return;
      // A copy: a subscriber that changes what it got changes nothing of what onEvent gets.
      publishTo(channels.event, (): EventMessage => {
        const { scope, error, ...decision } = event;
        const message: EventMessage = decision;
        if (include.scope === true) message.scope = scope;
        if (error !== undefined) message.error = summaryOf(error, withErrorMessages);
        return message;
      });
    },

    /**
     * Runs `run` as one observed call: `run` runs the procedure through `call.procedure` (its settlement tells a
     * stored answer from a released one) and says how long it waited for another call with its key.
     */
    async observed<T>(
      request: IdempotentRequest,
      run: (call: ObservedCall<T>) => Promise<RunResult<T>>,
    ): Promise<RunResult<T>> {
      if (off) return run(UNOBSERVED);
      const startedAt = performance.now();
      let settlement: Settlement<T> | undefined;
      let procedureMs = 0;
      let waitedMs = 0;
      const call: ObservedCall<T> = {
        async procedure(work) {
          const from = performance.now();
          try {
            settlement = await work();
            return settlement;
          } finally {
            procedureMs += performance.now() - from;
          }
        },
        waited(ms) {
          waitedMs += ms;
        },
      };
      let span: Span | undefined;
      let instruments: Instruments | undefined;
      // Whether its path is named, decided once: the call's +1 in flight and its -1 land on one series.
      let named = false;
      // Each reporter on its own: one that throws leaves the others, and the answer, as they are.
      quietly(() => {
        const provider = meterProvider();
        instruments = provider && instrumentsOf(provider);
        named = instruments?.paths.admits(request.path) === true;
      });
      const base: Attributes = { "idemkit.mode": mode, ...(named ? { "idemkit.path": request.path } : OVERFLOWED) };
      quietly(() => {
        span = tracerProvider()
          ?.getTracer(INSTRUMENTATION)
          .startSpan(named ? `idemkit ${request.path}` : "idemkit", {
            attributes: { "idemkit.mode": mode, "idemkit.path": request.path, "idemkit.key": request.key },
          });
      });
      quietly(() => instruments?.active.add(1, base));
      const ended = (outcome: CallOutcome, error?: unknown) => {
        const durationMs = performance.now() - startedAt;
        // The rest of the call is idemkit's with its store: the statements, BEGIN and COMMIT, a connection's wait.
        const storeMs = Math.max(0, durationMs - procedureMs - waitedMs);
        quietly(() => {
          const attributes = { ...base, "idemkit.outcome": outcome };
          instruments?.active.add(-1, base);
          instruments?.calls.add(1, attributes);
          instruments?.duration.record(durationMs / 1_000, attributes);
          if (instruments && (outcome === CallOutcome.EXECUTED || outcome === CallOutcome.REPLAYED)) {
            tallied(instruments.tally, named ? request.path : OVERFLOW)[outcome]++;
          }
        });
        quietly(() => {
          if (!span) return;
          span.setAttributes({
            "idemkit.outcome": outcome,
            "idemkit.replayed": outcome === CallOutcome.REPLAYED,
            "idemkit.waited_ms": waitedMs,
            "idemkit.store_ms": storeMs,
            "idemkit.procedure_ms": procedureMs,
          });
          const refusal = [CallOutcome.CONFLICT, CallOutcome.MISMATCH, CallOutcome.RATE_LIMITED] as CallOutcome[];
          if (error !== undefined && !refusal.includes(outcome)) {
            // By default its type alone (its code, or its name): the message and the stack, which begins with it,
            // may hold what the app put in them.
            if (!withErrorMessages) span.recordException(summaryOf(error, false));
            else span.recordException(error instanceof Error ? error : String(error));
            span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
          }
          span.end();
        });
        publishTo(channels.call, (): CallMessage => {
          const message: CallMessage = {
            path: request.path,
            key: request.key,
            mode,
            outcome,
            durationMs,
            waitedMs,
            storeMs,
          };
          if (error !== undefined) message.error = summaryOf(error, withErrorMessages);
          return message;
        });
      };
      try {
        // The call's span is the active one while it runs: the store's statements and the procedure's own work
        // (a database client, a fetch to the provider) are traced as its children.
        const result = await (span
          ? context.with(trace.setSpan(context.active(), span), run, undefined, call)
          : run(call));
        ended(resolvedOutcome(result, settlement));
        return result;
      } catch (error) {
        // A call answered while its work (or the storing of its answer) goes on ends when that does.
        const settling = settlingOf(error);
        if (!settling) ended(thrownOutcome(error), error);
        else {
          // Answered IN_PROGRESS at procedureTimeoutMs, or RAN_UNRECORDED while its answer is still being stored.
          const timedOut = isIdempotencyError(error) && error.code === IdempotencyErrorCode.IN_PROGRESS;
          const said = timedOut ? CallOutcome.TIMED_OUT : thrownOutcome(error);
          void settling.then(() => ended(said, error));
        }
        throw error;
      }
    },
  };
}
