import { TRPCError } from "@trpc/server";
import { desc, eq } from "drizzle-orm";
import { z } from "zod";
import { db } from "../../db/index.js";
import { posts } from "../../db/schema.js";
import { createTRPCRouter, idempotentProcedure, protectedProcedure } from "../trpc.js"; // idemkit
import { hold } from "./hold.js";

export const postRouter = createTRPCRouter({
  create: idempotentProcedure // idemkit
    .input(z.object({ name: z.string().min(1) }))
    .mutation(async ({ ctx, input }) => {
      const [post] = await ctx.db
        .insert(posts)
        .values({ name: input.name, createdById: ctx.session.user.id })
        .returning();
      await hold(input.name);
      if (input.name.startsWith("banned")) {
        throw new TRPCError({ code: "FORBIDDEN", message: `"${input.name}" is not allowed.` });
      }
      return post;
    }),

  /** Writes through the imported `db` instead of `ctx.db`: the mistake idemkit must catch, not hang on. */
  createBypassing: idempotentProcedure.input(z.object({ name: z.string().min(1) })).mutation(async ({ ctx, input }) => {
    const [post] = await db.insert(posts).values({ name: input.name, createdById: ctx.session.user.id }).returning();
    return post;
  }),

  mine: protectedProcedure.query(({ ctx }) =>
    ctx.db.select().from(posts).where(eq(posts.createdById, ctx.session.user.id)).orderBy(desc(posts.id)),
  ),
});
