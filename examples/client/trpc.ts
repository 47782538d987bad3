/**
 * The browser's tRPC client: mutations go through idemkit's link (one key each, kept across retries, never
 * batched), everything else through the batching link; and the React bindings of TanStack Query.
 */
// #region client
import { idempotencyContext, idempotencyLink } from "@idemkit/trpc/client";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import superjson from "superjson";
import type { Cart } from "../server/cart";
import type { AppRouter } from "../server/router";

export const trpcClient = createTRPCClient<AppRouter>({
  links: [
    idempotencyLink({ url: "/api/trpc", transformer: superjson, retry: { maxAttempts: 5 } }),
    httpBatchLink({ url: "/api/trpc", transformer: superjson }),
  ],
});

// One action, one key, chosen by you:
export function placeOrder(cart: Cart, key: string) {
  return trpcClient.checkout.placeOrder.mutate(cart, { context: idempotencyContext({ key }) });
}

// TanStack Query's bindings, whose procedures the hook takes (useTRPC().checkout.placeOrder).
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();
// #endregion client
