/**
 * trpc.ts's idempotentProcedure for a router whose errorFormatter is not the app's to change (one shared by several
 * apps): tRPC 11.22's per-procedure `.errors()` puts the refusal's code in `data.idempotency` for this procedure.
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
