/** The operator page's numbers: idemkit's metrics in this process, read now. */
import { operatorSnapshot } from "@/server/operator-metrics";

export async function GET(): Promise<Response> {
  return Response.json(await operatorSnapshot(), { headers: { "cache-control": "no-store" } });
}

export const dynamic = "force-dynamic";
