/**
 * tRPC 11.22's per-procedure `.errors()` with `idempotencyErrors`: a router whose app formatter knows nothing of
 * idemkit (as T3's and most apps' do) still answers the procedure's refusals with `data.idempotency`, typed on the
 * client, over real HTTP and a real PostgreSQL; the procedure's own errors still go through the app's formatter.
 */

import type { IdempotencyErrorCode } from "@idemkit/core";
import { drizzleStore } from "@idemkit/drizzle";
import { openPostgres } from "@idemkit/testkit";
import { createTRPCClient, safe } from "@trpc/client";
import { initTRPC, TRPCError } from "@trpc/server";
import { afterAll, beforeAll, describe, expect, expectTypeOf, inject, it } from "vitest";
import { z } from "zod";
import { idempotencyContext, idempotencyLink } from "../src/client/index.js";
import { idempotency, idempotencyErrors } from "../src/index.js";
import { serveRouter } from "./serve-router.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
const closers: Array<{ close(): Promise<void> }> = [];
beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"));
});
afterAll(async () => {
  await Promise.all(closers.map((closer) => closer.close()));
  await database?.close();
});

/** A shop whose app formatter adds a field of its own and nothing of idemkit's; `.errors()` on its one mutation. */
async function serveShop() {
  let runs = 0;
  const t = initTRPC.context<{ req: Request; resHeaders: Headers }>().create({
    errorFormatter: ({ shape }) => ({ ...shape, data: { ...shape.data, formattedByApp: true as const } }),
  });
  const router = t.router({
    pay: t.procedure
      .errors(idempotencyErrors)
      .use(idempotency({ store: drizzleStore({ db: database.db }), scope: () => "everyone" }))
      .input(z.object({ cents: z.number() }))
      .mutation(({ input }) => {
        runs++;
        if (input.cents <= 0) throw new TRPCError({ code: "BAD_REQUEST", message: "nothing to pay" });
        return { paid: input.cents };
      }),
  });
  const server = await serveRouter(router);
  closers.push(server);
  const client = createTRPCClient<typeof router>({ links: [idempotencyLink({ url: `${server.url}/trpc` })] });
  return { client, runs: () => runs };
}

describe("a procedure with .errors(idempotencyErrors)", () => {
  it("answers a key reused with another input FINGERPRINT_MISMATCH in data.idempotency, typed, without the app's formatter", async () => {
    const { client, runs } = await serveShop();
    const key = globalThis.crypto.randomUUID();
    const context = idempotencyContext({ key });
    expect(await client.pay.mutate({ cents: 500 }, { context })).toEqual({ paid: 500 });

    const [paid, error] = await safe(client.pay.mutate({ cents: 900 }, { context }));
    expect(paid).toBeUndefined();
    if (!error?.data || !("idempotency" in error.data)) throw new Error(`not an idemkit refusal: ${error}`);
    expectTypeOf(error.data.idempotency.code).toEqualTypeOf<IdempotencyErrorCode>();
    expect(error.data.idempotency).toEqual({
      code: "FINGERPRINT_MISMATCH",
      retryable: false,
      resend: "never",
      retryAfterMs: null,
    });
    expect(error.data.httpStatus).toBe(422);
    expect(runs()).toBe(1);
  });

  it("leaves the procedure's own errors to the app's formatter", async () => {
    const { client } = await serveShop();
    const [, error] = await safe(client.pay.mutate({ cents: 0 }));
    expect(error?.data).toMatchObject({ code: "BAD_REQUEST", formattedByApp: true });
    expect(error?.data).not.toHaveProperty("idempotency");
  });
});
