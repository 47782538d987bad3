/**
 * Arms fault switches for the calling user (POST), and says what a test can see of the process (GET): see
 * src/server/faults.ts. Answers 404 unless IDEMKIT_FAULTS=1.
 */
import { z } from "zod";
import { armFaults, faultState, faultsEnabled } from "@/server/faults";
import { userFromCookies } from "@/server/user";

const plan = z.object({
  failBeforeCommit: z.number().int().min(0).max(10).optional(),
  slowMs: z.number().int().min(0).max(30_000).optional(),
  loseCommitAnswer: z.number().int().min(0).max(10).optional(),
  failCompletions: z.number().int().min(0).max(10).optional(),
});

export function GET(): Response {
  if (!faultsEnabled) return new Response("Not found", { status: 404 });
  return Response.json(faultState());
}

export async function POST(req: Request): Promise<Response> {
  if (!faultsEnabled) return new Response("Not found", { status: 404 });
  const userId = userFromCookies(req.headers.get("cookie"));
  if (!userId) return Response.json({ error: "No uid cookie." }, { status: 401 });
  const parsed = plan.safeParse(await req.json().catch(() => undefined));
  if (!parsed.success) return Response.json({ error: parsed.error.issues }, { status: 400 });
  const { failBeforeCommit, slowMs, loseCommitAnswer, failCompletions } = parsed.data;
  armFaults(userId, {
    ...(failBeforeCommit !== undefined && { failBeforeCommit }),
    ...(slowMs !== undefined && { slowMs }),
    ...(loseCommitAnswer !== undefined && { loseCommitAnswer }),
    ...(failCompletions !== undefined && { failCompletions }),
  });
  return Response.json({ armed: parsed.data });
}
