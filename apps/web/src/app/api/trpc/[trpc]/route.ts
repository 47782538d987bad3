import { database } from "@/server/database";
import { env } from "@/server/env";
import { createHandler, createRouter } from "@/server/router";
import { shutdownSignal } from "@/server/shutdown";

let handle: Promise<(req: Request) => Promise<Response>> | undefined;

async function handler(req: Request): Promise<Response> {
  try {
    handle ??= database().then(({ db }) =>
      createHandler(createRouter({ db }), { bodyTimeoutMs: env.bodyTimeoutMs, stop: shutdownSignal() }),
    );
    return await (await handle)(req);
  } catch (error) {
    handle = undefined;
    // The database could not be opened: nothing ran, and the client's retry may find it back.
    console.error("checkout API unavailable:", error);
    return Response.json({ error: "The database is unavailable." }, { status: 503, headers: { "retry-after": "1" } });
  }
}

export { handler as GET, handler as POST };
