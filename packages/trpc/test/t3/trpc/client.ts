/** The links of create-t3-app's `src/trpc/react.tsx`, as a plain client for a test to call. */
import { idempotencyLink } from "@idemkit/trpc/client"; // idemkit
import { createTRPCClient, httpBatchStreamLink, loggerLink } from "@trpc/client";
import SuperJSON from "superjson";
import type { AppRouter } from "../server/api/root.js";

export function createClient(baseUrl: string, user: string) {
  return createTRPCClient<AppRouter>({
    links: [
      loggerLink({ enabled: () => false }),
      idempotencyLink({ url: `${baseUrl}/api/trpc`, transformer: SuperJSON, headers: () => ({ "x-user": user }) }), // idemkit
      httpBatchStreamLink({
        transformer: SuperJSON,
        url: `${baseUrl}/api/trpc`,
        headers: () => {
          const headers = new Headers();
          headers.set("x-trpc-source", "nextjs-react");
          headers.set("x-user", user);
          return headers;
        },
      }),
    ],
  });
}
