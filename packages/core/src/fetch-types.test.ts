/**
 * A wrong option of `withIdempotency` is a compile error on that option, naming the mistake. Type tests: `npm run
 * typecheck` fails when an error moves off the line its `@ts-expect-error` is on; the handlers are never called.
 */
import { describe, expectTypeOf, it } from "vitest";
import { withIdempotency } from "./fetch.js";
import { memoryStore } from "./memory-store.js";

const handler = async () => Response.json({ ok: true });

describe("a wrong option of withIdempotency", () => {
  it("is reported on the option: a scope that is not a string, an option of the other mode", () => {
    const refused = () => [
      withIdempotency(handler, {
        store: memoryStore(),
        path: () => "/api/orders",
        // @ts-expect-error a scope names the owner of the key as a string
        scope: () => 42,
      }),
      withIdempotency(handler, {
        store: memoryStore(),
        path: () => "/api/orders",
        scope: () => "user",
        // @ts-expect-error transactionTimeoutMs is atomic mode's, and a memory store has lease mode only
        transactionTimeoutMs: 1_000,
      }),
    ];
    expectTypeOf(refused).toBeFunction();
  });
});
