"use client";
/**
 * The operator page's charts: the hit rate, the calls in flight and the outbox's lag, each a line over the last
 * minute of samples with its current value beside it, and the calls by how they ended. Read from /api/operator,
 * which reads idemkit's OpenTelemetry metrics in this server.
 */
import { useEffect, useState } from "react";
import type { OperatorSnapshot } from "@/server/operator-metrics";

const SAMPLES = 60;
const EVERY_MS = 1_000;

interface Series {
  hitRate: Array<number | null>;
  inFlight: number[];
  lagS: Array<number | null>;
}

export function OperatorCharts() {
  const [latest, setLatest] = useState<OperatorSnapshot>();
  const [series, setSeries] = useState<Series>({ hitRate: [], inFlight: [], lagS: [] });
  useEffect(() => {
    let stopped = false;
    const sample = async () => {
      const response = await fetch("/api/operator", { cache: "no-store" }).catch(() => undefined);
      if (stopped || !response?.ok) return;
      const snapshot = (await response.json()) as OperatorSnapshot;
      setLatest(snapshot);
      setSeries((before) => ({
        hitRate: [...before.hitRate, snapshot.hitRate].slice(-SAMPLES),
        inFlight: [...before.inFlight, snapshot.inFlight].slice(-SAMPLES),
        lagS: [...before.lagS, snapshot.outboxLag?.meanS ?? null].slice(-SAMPLES),
      }));
    };
    void sample();
    const timer = setInterval(sample, EVERY_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, []);

  const percent = (rate: number | null | undefined) => (rate == null ? "no calls yet" : `${Math.round(rate * 100)}%`);
  const lag = latest?.outboxLag;
  return (
    <div className="operator">
      <Chart
        title="Hit rate"
        value={percent(latest?.hitRate)}
        note="Replays over all answers: a client repeating itself"
        points={series.hitRate}
        max={1}
      />
      <Chart
        title="Calls in flight"
        value={String(latest?.inFlight ?? 0)}
        note="Protected calls running now"
        points={series.inFlight}
      />
      <Chart
        title="Outbox lag"
        value={lag ? `${lag.meanS.toFixed(2)} s mean, ${lag.maxS.toFixed(2)} s longest` : "no event published yet"}
        note="From an order's commit to its confirmation's publication"
        points={series.lagS}
      />
      <table aria-label="Calls by outcome">
        <tbody>
          {Object.entries(latest?.calls ?? {}).map(([outcome, count]) => (
            <tr key={outcome}>
              <th scope="row">{outcome}</th>
              <td>{count}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** One metric: a line over its samples (gaps where it had none yet), and its current value. */
function Chart({
  title,
  value,
  note,
  points,
  max,
}: {
  title: string;
  value: string;
  note: string;
  points: Array<number | null>;
  max?: number;
}) {
  const width = 240;
  const height = 48;
  const known = points.filter((point): point is number => point !== null);
  const top = max ?? Math.max(1, ...known);
  // The newest sample at the right edge: the line grows in from the right as the minute fills.
  const offset = SAMPLES - points.length;
  const line = points
    .map((point, index) =>
      point === null ? null : `${((offset + index) / (SAMPLES - 1)) * width},${height - (point / top) * height}`,
    )
    .filter(Boolean)
    .join(" ");
  return (
    <figure className="chart" aria-label={title}>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
        role="img"
        aria-label={`${title}: ${value}`}
      >
        <rect width={width} height={height} className="chart-ground" />
        {line ? <polyline points={line} className="chart-line" /> : null}
      </svg>
      <figcaption>
        <strong>{title}</strong> <output>{value}</output>
        <br />
        <small>{note}</small>
      </figcaption>
    </figure>
  );
}
