/** The operator's view of the demo: idemkit's own metrics, as small charts a person can read at a glance. */
import { OperatorCharts } from "@/client/operator-charts";

export default function OperatorPage() {
  return (
    <main>
      <h1>Operating it</h1>
      <p className="lede">
        idemkit's metrics in this server, read every second: how often clients repeat themselves, what runs now, and how
        far the outbox lags behind.
      </p>
      <OperatorCharts />
    </main>
  );
}
