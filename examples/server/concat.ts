/**
 * trpc.ts's idempotentProcedure, built the way tRPC recommends for library middleware: a procedure that states only
 * what it needs of the context, joined with `.concat()` onto any procedure of the app's that has it.
 */
// #region concat
import { idempotency } from "@idemkit/trpc";
import { initTRPC } from "@trpc/server";
import superjson from "superjson";
import type { Session } from "./session";
import { authedProcedure, store } from "./trpc";

const idempotent = initTRPC
  .context<{ session: Session }>()
  .create()
  .procedure.use(idempotency({ store, transformer: superjson, scope: ({ ctx }) => ctx.session.userId }));

export const idempotentProcedure = authedProcedure.concat(idempotent);
// #endregion concat
