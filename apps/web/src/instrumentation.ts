/**
 * Opens and migrates the database when the server starts, so the first visitor does not wait for it, and on the
 * embedded database starts sending order confirmations. Next.js serves nothing until `register` returns, so the
 * database is opened beside it, not before it: /api/health answers (503, not ready) while the migrations run or
 * the database is away. A database that cannot be reached yet must not fail the start either: Next.js would keep
 * that failure for the life of the process and answer 500 to everything, even once the database is back. So it is
 * logged, and every request tries again (the API answers 503 meanwhile).
 */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  // Before anything is protected, so that the operator page counts every call from the first.
  (await import("./server/operator-metrics")).installOperatorMetrics();
  const { database } = await import("./server/database");
  const { env } = await import("./server/env");
  database()
    .then(
      async ({ db, description }) => {
        console.log(`checkout database: ${description}`);
        // PGlite lives in this process, so its confirmations are sent from here; PostgreSQL has `npm run worker`.
        const started = globalThis as typeof globalThis & { idemkitConfirmations?: true };
        if (!env.databaseUrl && !started.idemkitConfirmations) {
          started.idemkitConfirmations = true; // once per process, however often Next.js registers
          const { confirmationRelay } = await import("./server/confirmations");
          confirmationRelay(db, (error) => console.error("order confirmations:", error)).start();
        }
      },
      (error: unknown) => console.error("checkout database not reachable yet; the API answers 503 until it is:", error),
    )
    .catch((error: unknown) => console.error("order confirmations could not start:", error));
}
