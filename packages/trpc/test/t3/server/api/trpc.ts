import { drizzleStore } from "@idemkit/drizzle"; // idemkit
import { idempotency, idempotencyErrorData } from "@idemkit/trpc"; // idemkit
import { initTRPC, TRPCError } from "@trpc/server";
import superjson from "superjson";
import { ZodError } from "zod";
import { auth } from "../auth.js";
import { db } from "../db/index.js";

export const createTRPCContext = async (opts: { headers: Headers }) => {
  const session = await auth(opts.headers);
  return { db, session, ...opts };
};

const t = initTRPC.context<typeof createTRPCContext>().create({
  transformer: superjson,
  errorFormatter({ shape, error }) {
    return {
      ...shape,
      data: {
        ...shape.data,
        zodError: error.cause instanceof ZodError ? error.cause.flatten() : null,
        idempotency: idempotencyErrorData(error), // idemkit
      },
    };
  },
});

export const createCallerFactory = t.createCallerFactory;
export const createTRPCRouter = t.router;

export const publicProcedure = t.procedure;

export const protectedProcedure = t.procedure.use(({ ctx, next }) => {
  if (!ctx.session?.user) throw new TRPCError({ code: "UNAUTHORIZED" });
  return next({ ctx: { session: { ...ctx.session, user: ctx.session.user } } });
});

// biome-ignore format: one line of the T3 guide's adoption diff
export const idempotentProcedure = protectedProcedure.use(idempotency({ store: drizzleStore({ db }), dbKey: "db", transformer: superjson, scope: ({ ctx }) => ctx.session.user.id })); // idemkit
