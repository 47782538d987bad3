/**
 * A replay's answer, made the way tRPC's middleware contract has it. A middleware answers with what `next()`
 * resolved to; a replay answers without running the procedure, and tRPC documents no other way to make a result
 * (trpc/trpc#4066). So a replay's result comes from a `next()` all the same: that of a private procedure whose
 * resolver returns the stored data, called through tRPC's own server-side caller, its middleware handing over
 * the result tRPC made.
 */
import { initTRPC } from "@trpc/server";

/** What goes into the private procedure (the data) and what comes out of it (tRPC's result for that data). */
interface Echo {
  data: unknown;
  result?: unknown;
}

const t = initTRPC.create();
const echo = t.procedure
  .use(async ({ next, getRawInput }) => {
    const echoed = (await getRawInput()) as Echo;
    const result = await next({ ctx: { data: echoed.data } });
    echoed.result = result;
    return result;
  })
  .mutation(({ ctx }) => ctx.data);
const caller = t.createCallerFactory(t.router({ echo }))({});

/** tRPC's middleware result for a call that answered `data`: what a replaying middleware returns. */
export async function replayedResult<TResult>(data: unknown): Promise<TResult> {
  const echoed: Echo = { data };
  await caller.echo(echoed as never);
  return echoed.result as TResult;
}
