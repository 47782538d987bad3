/**
 * tRPC's set-up: the context every procedure sees, and the procedures the router builds on. `idempotentProcedure`
 * is the one for mutations that must run once per user action.
 */
// #region trpc
import { drizzleStore } from "@idemkit/drizzle";
import { idempotency, idempotencyErrorData } from "@idemkit/trpc";
import { initTRPC, TRPCError } from "@trpc/server";
import type { TRPCRequestInfo } from "@trpc/server/http";
import superjson from "superjson";
import { db } from "./db";
import type { Session } from "./session";

export interface Context {
  // From the fetch adapter (handler.ts): the key is read from `req`, a replay is marked in `resHeaders`, and `info`
  // counts a batch's calls. A server-side caller has none of them.
  req?: Request;
  resHeaders?: Headers;
  info?: TRPCRequestInfo;
  session: Session | null;
}

const t = initTRPC.context<Context>().create({
  transformer: superjson,
  // Lets clients tell "retry" from "give up" by data.idempotency.code, never by message.
  errorFormatter: ({ shape, error }) => ({
    ...shape,
    data: { ...shape.data, idempotency: idempotencyErrorData(error) },
  }),
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const authedProcedure = t.procedure.use(({ ctx, next }) => {
  if (!ctx.session) throw new TRPCError({ code: "UNAUTHORIZED" });
  return next({ ctx: { session: ctx.session } });
});

export const store = drizzleStore({ db });
// Who owns a key: one user can never see or block another's.
export const scope = ({ ctx }: { ctx: { session: Session } }) => ctx.session.userId;

export const idempotentProcedure = authedProcedure.use(
  idempotency({
    store,
    scope,
    transformer: superjson, // results replay through it: a Date comes back a Date
  }),
);
// #endregion trpc
