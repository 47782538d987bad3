/**
 * The app's providers, with TanStack Query's persistence: an order placed while offline outlives a reload and
 * resumes with the key it was started with.
 */
// #region offline
import { idempotentMutationDefaults } from "@idemkit/react";
import { createSyncStoragePersister } from "@tanstack/query-sync-storage-persister";
import { QueryClient } from "@tanstack/react-query";
import { PersistQueryClientProvider } from "@tanstack/react-query-persist-client";
import { createTRPCOptionsProxy } from "@trpc/tanstack-react-query";
import type { ReactNode } from "react";
import superjson from "superjson";
import type { AppRouter } from "../server/router";
import { TRPCProvider, trpcClient } from "./trpc";

const queryClient = new QueryClient();
const trpc = createTRPCOptionsProxy<AppRouter>({ client: trpcClient, queryClient });
// Before the restore: a restored mutation runs with these, and is sent with the key it was started with.
queryClient.setMutationDefaults(
  trpc.checkout.placeOrder.mutationKey(),
  idempotentMutationDefaults(trpc.checkout.placeOrder, {
    onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.checkout.orders.queryKey() }),
  }),
);
const persister = createSyncStoragePersister({
  storage: typeof window === "undefined" ? undefined : window.sessionStorage,
  serialize: superjson.stringify, // inputs with dates, like your transformer
  deserialize: superjson.parse,
});

export function Providers({ children }: { children: ReactNode }) {
  return (
    <PersistQueryClientProvider
      client={queryClient}
      persistOptions={{ persister }}
      onSuccess={() => queryClient.resumePausedMutations()}
    >
      <TRPCProvider trpcClient={trpcClient} queryClient={queryClient}>
        {children}
      </TRPCProvider>
    </PersistQueryClientProvider>
  );
}
// #endregion offline
