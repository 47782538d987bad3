/**
 * What every part of idemkit that reports itself shares: diagnostics channels found at run time (so a bundle for the
 * browser never imports `node:diagnostics_channel`), instruments made once per meter provider, and observers that
 * can never change an outcome.
 */
import type { Meter, MeterProvider } from "@opentelemetry/api";

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
 * Instruments built by `build` once per meter provider, under idemkit's instrumentation scope: the instruments of a
 * no-op meter stay no-ops after an SDK is registered, so they are made for the provider of the moment.
 */
export function instrumentsPer<T>(scope: string, build: (meter: Meter) => T): (provider: MeterProvider) => T {
  const made = new WeakMap<MeterProvider, T>();
  return (provider) => {
    const known = made.get(provider);
    if (known) return known;
    const instruments = build(provider.getMeter(scope));
    made.set(provider, instruments);
    return instruments;
  };
}

/** What a channel subscriber is told of an error: a copy, so one that changes it changes nothing of the answer. */
export interface ErrorSummary {
  name: string;
  message: string;
  /** idemkit's error code (`IN_PROGRESS`, `STORE_UNAVAILABLE`, ...), or a driver's (`ECONNREFUSED`, `57014`). */
  code?: string;
}

/** The summary of what was thrown: the error itself keeps going to its caller, untouched. */
export function summaryOf(error: unknown): ErrorSummary {
  if (!(error instanceof Error)) return { name: typeof error, message: String(error) };
  const { code } = error as { code?: unknown };
  const summary: ErrorSummary = { name: error.name, message: error.message };
  if (typeof code === "string") summary.code = code;
  return summary;
}

/** `message` as a channel gets it: its error, when it has one, as a summary; no `error` at all when it has none. */
export function withErrorSummary<T extends object>(message: T): Omit<T, "error"> & { error?: ErrorSummary } {
  const { error, ...rest } = message as T & { error?: unknown };
  return error === undefined ? rest : { ...rest, error: summaryOf(error) };
}

/** Runs an observer, whose throw never reaches the caller: an observer never changes an outcome. */
export function quietly(observe: () => void): void {
  try {
    observe();
  } catch {
    // The observer's failure is its own.
  }
}
