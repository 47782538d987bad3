/**
 * The shop the Redis store's tests drive over HTTP: a lease-mode `charge` procedure that calls a payment provider
 * (an effect outside any database), as an app on the Redis store runs it. `charges` is what the provider was asked.
 */
import { idempotency } from "@idemkit/trpc";
import { initTRPC } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { type RedisClient, redisStore } from "../src/index.js";

interface Context {
  req: Request;
  resHeaders: Headers;
  userId: string;
}

export interface ShopOptions {
  /** The store's key prefix: the same one sees the same records (a process that replaces a killed one). */
  prefix?: string;
  storeTimeoutMs?: number;
  leaseMs?: number;
  /** The engine's clock, for a test that moves time past a lease. */
  now?: () => number;
  /** Awaited by every charge after it called the provider: lets a test hold a request mid-flight. */
  hold?: (key: string) => Promise<void>;
}

/** A shop whose `charge` calls a payment provider: `charges` counts what the provider was asked to do. */
export function shop(client: RedisClient, options: ShopOptions = {}) {
  const { prefix = `shop:${globalThis.crypto.randomUUID()}:`, hold, ...middleware } = options;
  const charges: string[] = [];
  const t = initTRPC.context<Context>().create();
  const idempotent = t.procedure.use(
    idempotency({
      store: redisStore({ client, prefix }),
      scope: ({ ctx }) => ctx.userId,
      mode: "lease",
      ...middleware,
    }),
  );
  const router = t.router({
    charge: idempotent
      .input((input) => input as { cents: number })
      .mutation(async ({ ctx, input }) => {
        charges.push(`${ctx.userId}:${input.cents}`);
        await hold?.(ctx.idempotency.key);
        return { charged: input.cents, key: ctx.idempotency.key };
      }),
  });
  const handler = (req: Request) =>
    fetchRequestHandler({
      endpoint: "/trpc",
      req,
      router,
      createContext: ({ req, resHeaders }) => ({ req, resHeaders, userId: req.headers.get("x-user") ?? "alice" }),
    });
  return {
    charges,
    handler,
  };
}

/** Sends a charge of `cents` with `key` (none when undefined) as `user`; -1 sends an input that is not a charge. */
export async function charge(url: string, cents: number, key: string | undefined, user = "alice") {
  const response = await fetch(`${url}/trpc/charge`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-user": user, ...(key && { "idempotency-key": key }) },
    body: JSON.stringify(cents === -1 ? "not a charge" : { cents }),
  });
  return {
    status: response.status,
    replayed: response.headers.get("idempotent-replayed"),
    retryAfter: response.headers.get("retry-after"),
    body: await response.json(),
  };
}
