/**
 * The shop the DynamoDB store's tests drive over HTTP: a lease-mode tRPC `charge` procedure that calls a payment
 * provider (an effect outside any database), as a Lambda on the DynamoDB store runs it. `charges` is what the
 * provider was asked to do; `answerBytes` makes the answer that large, to store it in parts.
 */
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { idempotency, idempotencyErrorData } from "@idemkit/trpc";
import { initTRPC } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { dynamoStore } from "../src/index.js";

interface Context {
  req: Request;
  resHeaders: Headers;
  userId: string;
}

export interface ShopOptions {
  storeTimeoutMs?: number;
  leaseMs?: number;
  /** The engine's clock, for a test that moves time past a lease. */
  now?: () => number;
  /** Awaited by every charge after it called the provider: lets a test hold a request mid-flight. */
  hold?: () => Promise<void>;
}

export function shop(client: DynamoDBClient, tableName: string, { hold, ...middleware }: ShopOptions = {}) {
  const charges: string[] = [];
  // As the guide sets tRPC up: a refusal's code and whether to retry reach the client in `data.idempotency`.
  const t = initTRPC.context<Context>().create({
    errorFormatter: ({ shape, error }) => ({
      ...shape,
      data: { ...shape.data, idempotency: idempotencyErrorData(error) },
    }),
  });
  const charge = t.procedure
    .use(idempotency({ store: dynamoStore({ client, tableName }), scope: ({ ctx }) => ctx.userId, ...middleware }))
    .input((input) => input as { cents: number; answerBytes?: number })
    .mutation(async ({ ctx, input }) => {
      charges.push(`${ctx.userId}:${input.cents}`);
      await hold?.();
      return { charged: input.cents, receipt: "🧾".repeat((input.answerBytes ?? 0) / 4) };
    });
  const router = t.router({ charge });
  const handler = (req: Request) =>
    fetchRequestHandler({
      endpoint: "/trpc",
      req,
      router,
      createContext: ({ req, resHeaders }) => ({ req, resHeaders, userId: req.headers.get("x-user") ?? "alice" }),
    });
  return { charges, handler };
}

/** Sends a charge of `cents` with `key` as `user`, its answer `answerBytes` long. */
export async function charge(url: string, cents: number, key: string, { user = "alice", answerBytes = 0 } = {}) {
  const response = await fetch(`${url}/trpc/charge`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-user": user, "idempotency-key": key },
    body: JSON.stringify({ cents, answerBytes }),
  });
  return {
    status: response.status,
    replayed: response.headers.get("idempotent-replayed"),
    retryAfter: response.headers.get("retry-after"),
    body: await response.json(),
  };
}
