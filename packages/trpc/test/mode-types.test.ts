/**
 * The middleware's types follow the mode the call runs in, which the store decides unless `mode` is given: a
 * lease-only store gives lease-mode types, and an option of one mode is a compile error in the other. These are
 * type tests: `npm run typecheck` (tsc over this file) fails when a type is wrong or a `@ts-expect-error` line is
 * let through, so the middleware is only ever built inside functions that never run.
 */

import { type IdempotencyStore, memoryStore } from "@idemkit/core";
import { drizzleStore, type TransactionOf } from "@idemkit/drizzle";
import { type inferProcedureBuilderResolverOptions, initTRPC, type TRPCProcedureBuilder } from "@trpc/server";
import type { PgliteDatabase } from "drizzle-orm/pglite";
import { describe, expectTypeOf, it } from "vitest";
import { idempotency } from "../src/index.js";

type Ctx = { userId: string; db: PgliteDatabase };
declare const db: PgliteDatabase;
const t = initTRPC.context<Ctx>().create();
const scope = ({ ctx }: { ctx: Ctx }) => ctx.userId;

/** What a resolver of the procedure `build` makes sees as `ctx.idempotency.tx`. */
// biome-ignore lint/suspicious/noExplicitAny: any procedure builder, whatever its context and input
type TxOf<TBuild extends () => TRPCProcedureBuilder<any, any, any, any, any, any, any, any, any>> =
  inferProcedureBuilderResolverOptions<ReturnType<TBuild>>["ctx"] extends {
    idempotency: { tx: infer Tx };
  }
    ? Tx
    : never;

describe("the mode, from the store", () => {
  it("is lease with a store that has no atomic mode: ctx.idempotency.tx is undefined", () => {
    const leased = () => t.procedure.use(idempotency({ store: memoryStore(), scope }));
    expectTypeOf<TxOf<typeof leased>>().toEqualTypeOf<undefined>();
  });

  it("is atomic with drizzleStore: ctx.idempotency.tx is its transaction, and so is ctx.db with dbKey", () => {
    const atomic = () => t.procedure.use(idempotency({ store: drizzleStore({ db }), scope, dbKey: "db" }));
    expectTypeOf<TxOf<typeof atomic>>().toEqualTypeOf<TransactionOf<PgliteDatabase>>();
    expectTypeOf<inferProcedureBuilderResolverOptions<ReturnType<typeof atomic>>["ctx"]["db"]>().toEqualTypeOf<
      TransactionOf<PgliteDatabase>
    >();
  });

  it("is lease with drizzleStore when asked: tx is undefined", () => {
    const leased = () => t.procedure.use(idempotency({ store: drizzleStore({ db }), scope, mode: "lease" }));
    expectTypeOf<TxOf<typeof leased>>().toEqualTypeOf<undefined>();
  });

  it("is either with a store whose type does not say: tx may be undefined", () => {
    const either = (store: IdempotencyStore<string>) => () => t.procedure.use(idempotency({ store, scope }));
    expectTypeOf<TxOf<ReturnType<typeof either>>>().toEqualTypeOf<string | undefined>();
  });
});

describe("an option of the other mode is refused at compile time", () => {
  it("atomic mode's options in lease mode", () => {
    const refused = () => [
      // @ts-expect-error a lease-only store has no atomic mode
      idempotency({ store: memoryStore(), scope, mode: "atomic" }),
      // @ts-expect-error dbKey hands over a transaction, which lease mode does not have
      idempotency({ store: memoryStore(), scope, dbKey: "db" }),
      // @ts-expect-error the transaction's bound belongs to atomic mode
      idempotency({ store: drizzleStore({ db }), scope, mode: "lease", transactionTimeoutMs: 1_000 }),
    ];
    expectTypeOf(refused).toBeFunction();
  });

  it("lease mode's options in atomic mode", () => {
    const refused = () => [
      // @ts-expect-error a lease is lease mode's
      idempotency({ store: drizzleStore({ db }), scope, leaseMs: 1_000 }),
      // @ts-expect-error the client's wait for a procedure is lease mode's; atomic mode has transactionTimeoutMs
      idempotency({ store: drizzleStore({ db }), scope, procedureTimeoutMs: 1_000 }),
      // @ts-expect-error waitUntil carries on lease mode's unanswered work
      idempotency({ store: drizzleStore({ db }), scope, mode: "atomic", waitUntil: () => {} }),
    ];
    expectTypeOf(refused).toBeFunction();
  });

  it("each mode's own options are taken", () => {
    const taken = () => [
      idempotency({ store: drizzleStore({ db }), scope, dbKey: "db", transactionTimeoutMs: 1_000 }),
      idempotency({ store: memoryStore(), scope, leaseMs: 1_000, procedureTimeoutMs: 1_000, waitUntil: () => {} }),
      idempotency({ store: drizzleStore({ db }), scope, mode: "lease", leaseMs: 1_000, maxHoldMs: 10_000 }),
    ];
    expectTypeOf(taken).toBeFunction();
  });
});

describe("a wrong option is reported on that option", () => {
  it("a scope that is not a string, and an option of the other mode, each on its own line", () => {
    const refused = () => [
      idempotency({
        store: drizzleStore({ db }),
        // @ts-expect-error a scope names the owner of the key as a string
        scope: ({ ctx }: { ctx: Ctx }) => ctx.userId.length,
      }),
      idempotency({
        store: drizzleStore({ db }),
        scope,
        // @ts-expect-error leaseMs is lease mode's, and drizzleStore runs atomic mode unless told otherwise
        leaseMs: 1_000,
      }),
    ];
    expectTypeOf(refused).toBeFunction();
  });
});
