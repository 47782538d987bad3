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
 * Channels: `idemkit:call` (one message per call, when it ends) and `idemkit:event` (each engine decision, as
 * `onEvent` gets it).
 */
import {
  type Attributes,
  type Counter,
  type Histogram,
  type MeterProvider,
  metrics,
  type Span,
  SpanStatusCode,
  type TracerProvider,
  trace,
  type UpDownCounter,
} from "@opentelemetry/api";
import { IdempotencyErrorCode, isIdempotencyError } from "../errors.js";
import { channelNamed, instrumentsPer, publishTo, quietly } from "../observing.js";
import type { IdempotencyEvent, IdempotencyMode, IdempotentRequest, RunResult, Settlement } from "./types.js";

/** How a protected call ended, as telemetry counts it. */
export const CallOutcome = {
  /** It ran, and its answer was stored. */
  EXECUTED: "executed",
  /** A stored answer was sent again. */
  REPLAYED: "replayed",
  /** The key was held by a call still running: answered IN_PROGRESS. */
  CONFLICT: "conflict",
  /** The key came with another input: answered FINGERPRINT_MISMATCH. */
  MISMATCH: "mismatch",
  /** It ran and failed, or answered what is not kept (a 5xx): the key was released, a retry runs again. */
  RELEASED: "released",
  /** The store failed or is not set up: answered STORE_UNAVAILABLE or STORE_MISCONFIGURED; nothing ran. */
  STORE_ERROR: "store_error",
  /** Lease mode: its lease was lost, or its answer could not be stored. */
  LEASE_LOST: "lease_lost",
  /** Its scope was over the engine's `limits`: answered RATE_LIMITED; nothing ran. */
  RATE_LIMITED: "rate_limited",
} as const;
export type CallOutcome = (typeof CallOutcome)[keyof typeof CallOutcome];

/** Where the engine's telemetry goes: the global OpenTelemetry providers by default, or these; false for none. */
export interface TelemetryOptions {
  tracerProvider?: TracerProvider;
  meterProvider?: MeterProvider;
}

/** What `idemkit:call` subscribers get, once per call. The scope (a user id) is left out. */
export interface CallMessage {
  path: string;
  key: string;
  mode: IdempotencyMode;
  outcome: CallOutcome;
  durationMs: number;
  /** For a call that threw: what it threw (the refusal, or the procedure's failure). */
  error?: unknown;
}

const INSTRUMENTATION = "@idemkit/core";

const channels = { call: channelNamed("idemkit:call"), event: channelNamed("idemkit:event") };

/** One meter's instruments, made once per provider: instruments of a no-op meter stay no-ops once an SDK is set. */
interface Instruments {
  calls: Counter;
  active: UpDownCounter;
  duration: Histogram;
  /** Per path: answers executed and replayed, for the hit rate. */
  tally: Map<string, { executed: number; replayed: number }>;
}
const instrumentsOf = instrumentsPer(INSTRUMENTATION, (meter): Instruments => {
  const tally = new Map<string, { executed: number; replayed: number }>();
  const ratio = meter.createObservableGauge("idemkit.replay.ratio", {
    description: "Of the calls answered so far, the share answered with a stored answer (replays), per path.",
  });
  ratio.addCallback((result) => {
    for (const [path, { executed, replayed }] of tally) {
      if (executed + replayed > 0) result.observe(replayed / (executed + replayed), { "idemkit.path": path });
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
    tally,
  };
});

/** The outcome of a call that resolved. */
function resolvedOutcome(result: RunResult<unknown>, settlement: Settlement<unknown> | undefined): CallOutcome {
  if (result.replayed) return CallOutcome.REPLAYED;
  return settlement?.response ? CallOutcome.EXECUTED : CallOutcome.RELEASED;
}

/** The outcome of a call that threw: one of idemkit's refusals, or the procedure's own failure (its key released). */
function thrownOutcome(error: unknown): CallOutcome {
  if (!isIdempotencyError(error)) return CallOutcome.RELEASED;
  switch (error.code) {
    case IdempotencyErrorCode.IN_PROGRESS:
      return CallOutcome.CONFLICT;
    case IdempotencyErrorCode.FINGERPRINT_MISMATCH:
      return CallOutcome.MISMATCH;
    case IdempotencyErrorCode.LEASE_LOST:
    case IdempotencyErrorCode.RESULT_NOT_STORED:
      return CallOutcome.LEASE_LOST;
    case IdempotencyErrorCode.RATE_LIMITED:
      return CallOutcome.RATE_LIMITED;
    default:
      return CallOutcome.STORE_ERROR;
  }
}

/**
 * The engine's telemetry, for one engine: `observed(request, run)` wraps one call, `event(e)` publishes a decision.
 * `false` turns both off.
 */
export function telemetryOf(mode: IdempotencyMode, options: TelemetryOptions | false | undefined) {
  const off = options === false;
  const tracerProvider = () => (off ? undefined : (options?.tracerProvider ?? trace.getTracerProvider()));
  const meterProvider = () => (off ? undefined : (options?.meterProvider ?? metrics.getMeterProvider()));

  return {
    event(event: IdempotencyEvent): void {
      // A copy: a subscriber that changes what it got changes nothing of what onEvent gets.
      if (!off) publishTo(channels.event, () => ({ ...event }));
    },

    /**
     * Runs `run` as one observed call: `run` gets a function to hand the settlement of a first execution through,
     * which tells a stored answer from a released one.
     */
    async observed<T>(
      request: IdempotentRequest,
      run: (seen: (settlement: Settlement<T>) => Settlement<T>) => Promise<RunResult<T>>,
    ): Promise<RunResult<T>> {
      if (off) return run((settlement) => settlement);
      const startedAt = performance.now();
      const base: Attributes = { "idemkit.mode": mode, "idemkit.path": request.path };
      let span: Span | undefined;
      let instruments: Instruments | undefined;
      // Each reporter on its own: one that throws leaves the others, and the answer, as they are.
      quietly(() => {
        span = tracerProvider()
          ?.getTracer(INSTRUMENTATION)
          .startSpan(`idemkit ${request.path}`, { attributes: { ...base, "idemkit.key": request.key } });
      });
      quietly(() => {
        const provider = meterProvider();
        instruments = provider && instrumentsOf(provider);
        instruments?.active.add(1, base);
      });
      let settlement: Settlement<T> | undefined;
      const ended = (outcome: CallOutcome, error?: unknown) => {
        const durationMs = performance.now() - startedAt;
        quietly(() => {
          const attributes = { ...base, "idemkit.outcome": outcome };
          instruments?.active.add(-1, base);
          instruments?.calls.add(1, attributes);
          instruments?.duration.record(durationMs / 1_000, attributes);
          if (instruments && (outcome === CallOutcome.EXECUTED || outcome === CallOutcome.REPLAYED)) {
            const counts = instruments.tally.get(request.path) ?? { executed: 0, replayed: 0 };
            counts[outcome]++;
            instruments.tally.set(request.path, counts);
          }
        });
        quietly(() => {
          if (!span) return;
          span.setAttributes({ "idemkit.outcome": outcome, "idemkit.replayed": outcome === CallOutcome.REPLAYED });
          const refusal = [CallOutcome.CONFLICT, CallOutcome.MISMATCH, CallOutcome.RATE_LIMITED] as CallOutcome[];
          if (error !== undefined && !refusal.includes(outcome)) {
            span.recordException(error instanceof Error ? error : String(error));
            span.setStatus({ code: SpanStatusCode.ERROR, message: outcome });
          }
          span.end();
        });
        publishTo(channels.call, (): CallMessage => {
          const message: CallMessage = { path: request.path, key: request.key, mode, outcome, durationMs };
          if (error !== undefined) message.error = error;
          return message;
        });
      };
      try {
        const result = await run((given) => {
          settlement = given;
          return given;
        });
        ended(resolvedOutcome(result, settlement));
        return result;
      } catch (error) {
        ended(thrownOutcome(error), error);
        throw error;
      }
    },
  };
}
