/**
 * A router of a test's own over real HTTP: tRPC's fetch adapter under `/trpc`, its context the request and the
 * response headers, which the middleware reads its key from and marks a replay on.
 */
import { type ServedHandler, serveFetch } from "@idemkit/testkit";
import type { AnyTRPCRouter } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";

/** Serves `router` at `${url}/trpc`; close it when the test is done. */
export function serveRouter(router: AnyTRPCRouter): Promise<ServedHandler> {
  return serveFetch((req) =>
    fetchRequestHandler({
      endpoint: "/trpc",
      req,
      router,
      createContext: ({ resHeaders }) => ({ req, resHeaders }),
    }),
  );
}
