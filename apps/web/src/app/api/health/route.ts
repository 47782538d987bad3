/**
 * Readiness for an orchestrator or a load balancer: 200 once this instance has its database open and migrated and
 * can reach it now, 503 otherwise (so no traffic is routed to an instance that would only answer 503).
 */
import { sql } from "drizzle-orm";
import { database } from "@/server/database";

/** Longest the check waits for the database, in ms: a readiness probe must answer, whatever the database does. */
const CHECK_TIMEOUT_MS = 2_000;

export async function GET(): Promise<Response> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([database().then(({ db }) => db.execute(sql`select 1`)), timedOut]);
    return Response.json({ status: "ready" });
  } catch {
    // The reason stays in the server's log (instrumentation, the API): a public probe says no more than "not yet".
    return Response.json({ status: "unavailable" }, { status: 503, headers: { "retry-after": "1" } });
  } finally {
    clearTimeout(timer);
  }
}

export const dynamic = "force-dynamic";
