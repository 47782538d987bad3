/**
 * A wrong option of `idempotentAction` is a compile error on that option, naming the mistake, not one on the action
 * that reads "'unknown' is not assignable to" its state. These are type tests: `npm run typecheck` fails when an
 * error moves off the line its `@ts-expect-error` is on, so the actions are only ever built inside a function that
 * never runs.
 */

import { memoryStore } from "@idemkit/core";
import type { ModeOptions } from "@idemkit/core/adapter";
import { drizzleStore } from "@idemkit/drizzle";
import { sql } from "drizzle-orm";
import type { PgliteDatabase } from "drizzle-orm/pglite";
import { describe, expectTypeOf, it } from "vitest";
import { idempotentAction } from "../src/index.js";

declare const db: PgliteDatabase;
interface CheckoutState {
  error?: string;
}

describe("a wrong option of idempotentAction", () => {
  it("is reported on the option: a scope that is not a string, an option of the other mode, an unknown one", () => {
    const build = () => [
      idempotentAction(
        "checkout.placeOrder",
        async ({ tx }, _previous: CheckoutState, _form: FormData): Promise<CheckoutState> => {
          await tx.execute(sql`select 1`);
          return {};
        },
        {
          store: drizzleStore({ db }),
          // @ts-expect-error a scope names the owner of the key as a string
          scope: async () => 42,
        },
      ),
      idempotentAction(
        "checkout.placeOrder",
        async ({ tx }, _previous: CheckoutState, _form: FormData): Promise<CheckoutState> => {
          await tx.execute(sql`select 1`);
          return {};
        },
        {
          store: drizzleStore({ db }),
          scope: () => "user",
          // @ts-expect-error drizzleStore runs in atomic mode unless told otherwise, and leaseMs is lease mode's
          leaseMs: 60_000,
        },
      ),
      idempotentAction("notes.add", async (_idempotency, _previous: CheckoutState, _form: FormData) => ({}), {
        store: memoryStore(),
        scope: () => "user",
        // @ts-expect-error transactionTimeoutMs is atomic mode's, and a memory store has lease mode only
        transactionTimeoutMs: 1_000,
      }),
    ];
    expectTypeOf(build).toBeFunction();
  });

  it("names the mode an option of the other mode belongs to, in the compiler's message", () => {
    expectTypeOf<ModeOptions<"atomic">["leaseMs"]>().toEqualTypeOf<
      "leaseMs is an option of lease mode only" | undefined
    >();
    expectTypeOf<ModeOptions<"lease">["transactionTimeoutMs"]>().toEqualTypeOf<
      "transactionTimeoutMs is an option of atomic mode only" | undefined
    >();
  });
});
