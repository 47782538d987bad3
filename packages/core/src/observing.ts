/**
 * What every part of idemkit that reports itself shares: diagnostics channels found at run time (so a bundle for the
 * browser never imports `node:diagnostics_channel`), instruments made once per meter provider with their series
 * bounded, errors summed up without the app's own words, and observers that can never change an outcome.
 */
import type { Attributes, Meter, MeterProvider } from "@opentelemetry/api";

/** A diagnostics channel, as the runtime has it (Node.js, Deno, Bun). */
export interface Channel {
  readonly hasSubscribers: boolean;
  publish(message: unknown): void;
}

const channelModule = (() => {
  const process = (globalThis as { process?: { getBuiltinModule?: (name: string) => unknown } }).process;
  return process?.getBuiltinModule?.("node:diagnostics_channel") as { channel(name: string): Channel } | undefined;
})();

/** The channel `name`, or undefined where the runtime has none. */
export function channelNamed(name: string): Channel | undefined {
  return channelModule?.channel(name);
}

/** Publishes `message` on `channel` when anyone listens, swallowing what a subscriber throws. */
export function publishTo(channel: Channel | undefined, message: () => unknown): void {
  if (channel?.hasSubscribers) quietly(() => channel.publish(message()));
}

/**
 * The most values of one unbounded attribute (a path, a topic, a consumer) that get series of their own, per meter
 * provider. The OpenTelemetry SDK keeps 2,000 series per instrument by default and sends any series past them to
 * one overflow, a route's among them. The widest of idemkit's instruments (`idemkit.calls`) has up to 20 series
 * per path (10 outcomes, 2 modes), so 90 paths and the overflow's own 20 stay within the SDK's limit (1,820).
 */
export const MAX_SERIES_VALUES = 90;

/** What stands for a value past the limit, marked as the SDK marks its own overflow. */
export const OVERFLOWED: Attributes = { "otel.metric.overflow": true };

/**
 * Which values of one unbounded attribute have series of their own, for one meter provider: the first
 * `MAX_SERIES_VALUES` seen, kept for the provider's life; every later one shares the overflow's. A value has its own
 * series for good or never, so what a call adds when it starts and takes back when it ends land on one series.
 */
export class SeriesLimit {
  readonly #named = new Set<string>();
  #warned = false;

  constructor(
    /** The attribute bounded (`idemkit.path`). */
    readonly attribute: string,
    /** Said once, when the limit is first reached: what puts that many values in the attribute, and the fix. */
    readonly advice: string,
  ) {}

  /** Whether `value` has a series of its own: it had one, or there is room left for it. */
  admits(value: string): boolean {
    if (this.#named.has(value)) return true;
    if (this.#named.size < MAX_SERIES_VALUES) {
      this.#named.add(value);
      return true;
    }
    if (!this.#warned) {
      this.#warned = true;
      console.warn(
        `idemkit: more than ${MAX_SERIES_VALUES} values of ${this.attribute} reported to one meter provider (the ` +
          `latest: ${JSON.stringify(value)}); the others are reported as one, marked otel.metric.overflow. ${this.advice}`,
      );
    }
    return false;
  }

  /** `value` as an attribute (`{ [attribute]: value }`), or the overflow's mark in its place past the limit. */
  attributesOf(value: string): Attributes {
    return this.admits(value) ? { [this.attribute]: value } : OVERFLOWED;
  }
}

/**
 * Instruments built by `build` once per meter provider, under idemkit's instrumentation scope: the instruments of a
 * no-op meter stay no-ops after an SDK is registered, so they are made for the provider of the moment. `build` gets
 * `bounded(attribute, advice)` for each unbounded attribute its instruments carry: a `SeriesLimit` of that provider,
 * as the SDK's own limit is per provider.
 */
export function instrumentsPer<T>(
  scope: string,
  build: (meter: Meter, bounded: (attribute: string, advice: string) => SeriesLimit) => T,
): (provider: MeterProvider) => T {
  const made = new WeakMap<MeterProvider, T>();
  const bounded = (attribute: string, advice: string) => new SeriesLimit(attribute, advice);
  return (provider) => {
    const known = made.get(provider);
    if (known) return known;
    const instruments = build(provider.getMeter(scope), bounded);
    made.set(provider, instruments);
    return instruments;
  };
}

/**
 * What a channel subscriber is told of an error: a copy, so one that changes it changes nothing of the answer. Its
 * name and code say what went wrong; its message, which may hold whatever the app or a driver put in it (an email,
 * an input, a connection string), only when the app opts in.
 */
export interface ErrorSummary {
  /** The error's class (`IdempotencyError`, `TypeError`), or the type of what was thrown when it was no Error. */
  name: string;
  /** idemkit's error code (`IN_PROGRESS`, `STORE_UNAVAILABLE`, ...), or a driver's (`ECONNREFUSED`, `57014`). */
  code?: string;
  /** Its message: only with the telemetry's `include: { errorMessages: true }`. */
  message?: string;
}

/** The summary of what was thrown, its message only `withMessage`: the error itself keeps going to its caller. */
export function summaryOf(error: unknown, withMessage: boolean): ErrorSummary {
  const summary: ErrorSummary = { name: error instanceof Error ? error.name : typeof error };
  const { code } = (error ?? {}) as { code?: unknown };
  if (typeof code === "string") summary.code = code;
  if (withMessage) summary.message = error instanceof Error ? error.message : String(error);
  return summary;
}

/**
 * `message` as a channel gets it: its error, when it has one, as a summary (its message only `withMessage`); no
 * `error` at all when it has none.
 */
export function withErrorSummary<T extends object>(
  message: T,
  withMessage: boolean,
): Omit<T, "error"> & { error?: ErrorSummary } {
  const { error, ...rest } = message as T & { error?: unknown };
  return error === undefined ? rest : { ...rest, error: summaryOf(error, withMessage) };
}

/** Runs an observer, whose throw never reaches the caller: an observer never changes an outcome. */
export function quietly(observe: () => void): void {
  try {
    observe();
  } catch {
    // The observer's failure is its own.
  }
}
