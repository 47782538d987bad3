/** The README's tRPC quickstart, client side: the link that keys every mutation and retries it with its key. */
// #region trpc-client
import { idempotencyLink } from "@idemkit/trpc/client";
import { createTRPCClient } from "@trpc/client";
import type { AppRouter } from "./trpc-server";

// Every mutation gets a key, kept across its retries (a lost answer, a 503): the server runs it once.
const trpc = createTRPCClient<AppRouter>({ links: [idempotencyLink({ url: "/api/trpc" })] });

export const placeOrder = () => trpc.placeOrder.mutate({ items: [{ sku: "mug", qty: 1 }] });
// #endregion trpc-client
