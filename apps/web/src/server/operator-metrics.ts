/**
 * The demo's own metrics pipeline: an OpenTelemetry meter provider registered for this process, read on demand by
 * the operator page (/operator). idemkit reports to whatever provider the app registers; here that is an in-memory
 * reader, where an app would export to its collector.
 */
import { metrics } from "@opentelemetry/api";
import { type DataPoint, type Histogram, MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";

/** A reader collected when the page asks, with no timer and nothing exported. */
class OnDemandReader extends MetricReader {
  protected onForceFlush = async () => {};
  protected onShutdown = async () => {};
}

/** What the operator page shows, read from idemkit's metrics at one moment. */
export interface OperatorSnapshot {
  /** Replays over answers executed and replayed since the server started, across procedures; null before any. */
  hitRate: number | null;
  /** Protected calls running now. */
  inFlight: number;
  /** Protected calls since the server started, by how they ended. */
  calls: Record<string, number>;
  /** The outbox's lag, from an event's enqueue to its publication: mean and longest so far, in s; null before any. */
  outboxLag: { meanS: number; maxS: number } | null;
}

// The instrumentation hook and the route handlers are bundled apart: the reader is found through the process.
const READER = Symbol.for("idemkit.demo.operatorReader");
const processWide = globalThis as typeof globalThis & { [READER]?: OnDemandReader };

/** Registers the provider, once per process: before the first call, so idemkit's instruments are made on it. */
export function installOperatorMetrics(): void {
  if (processWide[READER]) return;
  const reader = new OnDemandReader();
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  processWide[READER] = reader;
}

export async function operatorSnapshot(): Promise<OperatorSnapshot> {
  const reader = processWide[READER];
  const snapshot: OperatorSnapshot = { hitRate: null, inFlight: 0, calls: {}, outboxLag: null };
  if (!reader) return snapshot;
  const { resourceMetrics } = await reader.collect();
  const points = (name: string) =>
    resourceMetrics.scopeMetrics
      .flatMap((scope) => scope.metrics)
      .filter((metric) => metric.descriptor.name === name)
      .flatMap((metric) => metric.dataPoints as DataPoint<unknown>[]);
  for (const point of points("idemkit.calls")) {
    const outcome = String(point.attributes["idemkit.outcome"]);
    snapshot.calls[outcome] = (snapshot.calls[outcome] ?? 0) + Number(point.value);
  }
  const executed = snapshot.calls.executed ?? 0;
  const replayed = snapshot.calls.replayed ?? 0;
  if (executed + replayed > 0) snapshot.hitRate = replayed / (executed + replayed);
  snapshot.inFlight = points("idemkit.calls.active").reduce((sum, point) => sum + Number(point.value), 0);
  const lags = points("idemkit.outbox.lag").map((point) => point.value as Histogram);
  const count = lags.reduce((sum, lag) => sum + lag.count, 0);
  if (count > 0) {
    snapshot.outboxLag = {
      meanS: lags.reduce((sum, lag) => sum + (lag.sum ?? 0), 0) / count,
      maxS: Math.max(...lags.map((lag) => lag.max ?? 0)),
    };
  }
  return snapshot;
}
