/**
 * trpc.ts's idempotentProcedure where the app's errorFormatter is not idemkit's to change: tRPC 11.22's per-procedure
 * `.errors()` puts the refusal's code in `data.idempotency` for this procedure alone, typed on the client.
 */
import { idempotency, idempotencyErrors } from "@idemkit/trpc";
import superjson from "superjson";
import { authedProcedure, scope, store } from "./trpc";

// #region procedure-errors
// Before the middleware, so that it sees the middleware's refusals; the procedure's own errors go on to the app's.
export const idempotentProcedure = authedProcedure
  .errors(idempotencyErrors)
  .use(idempotency({ store, scope, transformer: superjson }));
// #endregion procedure-errors
