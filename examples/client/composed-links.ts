/**
 * The same client with idemkit's retry link over links of your own choosing: mutations through httpLink, which
 * writes each one's key, everything else streamed in batches.
 */
// #region composed-links
import { idempotencyHeaders, idempotencyRetryLink } from "@idemkit/trpc/client";
import { createTRPCClient, httpBatchStreamLink, httpLink, splitLink } from "@trpc/client";
import superjson from "superjson";
import type { AppRouter } from "../server/router";

export const composedClient = createTRPCClient<AppRouter>({
  links: [
    splitLink({
      condition: (op) => op.type === "mutation",
      true: [
        idempotencyRetryLink({ retry: { maxAttempts: 5 } }), // the key, the retries, the offline waits
        httpLink({
          url: "/api/trpc",
          transformer: superjson,
          headers: (opts) => ({ ...idempotencyHeaders(opts), "x-trpc-source": "react" }), // your own headers beside it
        }),
      ],
      false: httpBatchStreamLink({ url: "/api/trpc", transformer: superjson }),
    }),
  ],
});
// #endregion composed-links
