/**
 * An outcome lookup for procedures scoped differently: placeOrder's records belong to a user, an organisation's
 * refunds (admin.refund, scoped by organisation in its own middleware) to the organisation.
 */
import { outcomeLookup, outcomeLookupInput } from "@idemkit/trpc";
import { authedProcedure, scope, store } from "./trpc";

// #region outcome-scopes
const lookup = outcomeLookup({
  store,
  scope, // the users' scope, idempotentProcedure's
  procedures: { "checkout.placeOrder": {}, "admin.refund": { scope: ({ ctx }) => ctx.session.orgId } },
});
// #endregion outcome-scopes

/** Mounted as router.ts mounts its own, in a router that has both procedures. */
export const idempotencyOutcome = authedProcedure.input(outcomeLookupInput).query(lookup);
