"use client";
/**
 * The browser's tRPC client: mutations go through idemkit's link (one key each, kept across retries, never
 * batched), everything else through the batching link. An order placed offline is persisted in sessionStorage
 * with its key, and resumes after a reload with that key.
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
  // Before the restore: a restored mutation runs with these, and is sent with the key it was started with. Every
  // mutation that can wait offline has them: one restored without would fail ("No mutationFn found").
  const trpc = createTRPCOptionsProxy<AppRouter>({ client: trpcClient, queryClient });
  const refreshOrders = () => queryClient.invalidateQueries({ queryKey: trpc.checkout.orders.queryKey() });
  const { placeOrder, editNote } = trpc.checkout;
  queryClient.setMutationDefaults(
    placeOrder.mutationKey(),
    idempotentMutationDefaults(placeOrder, { onSettled: refreshOrders }),
  );
  queryClient.setMutationDefaults(
    editNote.mutationKey(),
    idempotentMutationDefaults(editNote, { onSettled: refreshOrders }),
  );
  const persister = createSyncStoragePersister({
    // sessionStorage, like the forms' keys: each tab persists its own client whole, so a shared localStorage entry
    // would be overwritten by whichever tab saved last. Undefined on the server: nothing is persisted there.
    storage: typeof window === "undefined" ? undefined : window.sessionStorage,
    key: "idemkit-demo:offline",
    serialize: superjson.stringify,
    deserialize: superjson.parse,
  });
  return { queryClient, trpcClient, persister };
}
