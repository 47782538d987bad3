"use client";
/**
 * The browser's tRPC client: mutations go through idemkit's link (one key each, kept across retries, never
 * batched), everything else through the batching link. An order placed offline is persisted in localStorage with
 * its key, and resumes after a reload with that key.
 */
import { idempotentMutationDefaults } from "@idemkit/react";
import { idempotencyLink } from "@idemkit/trpc/client";
import { createSyncStoragePersister } from "@tanstack/query-sync-storage-persister";
import { QueryClient } from "@tanstack/react-query";
import { PersistQueryClientProvider } from "@tanstack/react-query-persist-client";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { createTRPCContext, createTRPCOptionsProxy } from "@trpc/tanstack-react-query";
import { type ReactNode, useState } from "react";
import superjson from "superjson";
import type { AppRouter } from "@/server/router";

export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

const url = "/api/trpc";

export function Providers({ children }: { children: ReactNode }) {
  const [{ queryClient, trpcClient, persister }] = useState(clients);
  return (
    <PersistQueryClientProvider
      client={queryClient}
      // Only what waits offline is persisted: the mutations TanStack Query paused. Queries are fetched afresh.
      persistOptions={{ persister, dehydrateOptions: { shouldDehydrateQuery: () => false } }}
      onSuccess={() => queryClient.resumePausedMutations()}
    >
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </PersistQueryClientProvider>
  );
}

function clients() {
  const queryClient = new QueryClient({ defaultOptions: { queries: { staleTime: 5_000 } } });
  const trpcClient = createTRPCClient<AppRouter>({
    links: [
      idempotencyLink<AppRouter>({ url, transformer: superjson }),
      httpBatchLink({ url, transformer: superjson }),
    ],
  });
  // Before the restore: a restored order runs with these, and is sent with the key it was started with.
  const trpc = createTRPCOptionsProxy<AppRouter>({ client: trpcClient, queryClient });
  queryClient.setMutationDefaults(
    trpc.checkout.placeOrder.mutationKey(),
    idempotentMutationDefaults(trpc.checkout.placeOrder, {
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.checkout.orders.queryKey() }),
    }),
  );
  const persister = createSyncStoragePersister({
    // Undefined while rendering on the server: nothing is persisted there.
    storage: typeof window === "undefined" ? undefined : window.localStorage,
    key: "idemkit-demo:offline",
    serialize: superjson.stringify,
    deserialize: superjson.parse,
  });
  return { queryClient, trpcClient, persister };
}
