/** The API's route: Next.js's `app/api/trpc/[trpc]/route.ts` is `export { handler as GET, handler as POST }`. */
// #region handler
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { appRouter } from "./router";
import { sessionOf } from "./session";

export function handler(req: Request): Promise<Response> {
  return fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    // The adapter's req, resHeaders and info, handed on: where the middleware reads the key and marks a replay.
    createContext: async ({ req, resHeaders, info }) => ({
      req,
      resHeaders,
      info,
      session: await sessionOf(req.headers),
    }),
  });
}
// #endregion handler
