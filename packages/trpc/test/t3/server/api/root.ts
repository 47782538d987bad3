import { postRouter } from "./routers/post.js";
import { createCallerFactory, createTRPCRouter } from "./trpc.js";

export const appRouter = createTRPCRouter({ post: postRouter });

export type AppRouter = typeof appRouter;

export const createCaller = createCallerFactory(appRouter);
