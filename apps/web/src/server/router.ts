/**
 * The checkout API (DESIGN.md §4). `checkout.placeOrder` is protected by idemkit in atomic mode: the order, its
 * lines, the simulated payment and the stored result commit in one transaction, or none of them do.
 */
import { drizzleStore, StaleVersionError, updateIfVersion } from "@idemkit/drizzle";
import { idempotency, idempotencyErrorData, outcomeLookup, outcomeLookupInput } from "@idemkit/trpc";
import { type AnyTRPCRouter, initTRPC, TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { and, desc, eq, inArray } from "drizzle-orm";
import superjson from "superjson";
import { z } from "zod";
import { type BodyOutcome, readBody } from "./body";
import { ORDER_PLACED, type OrderPlaced, outbox } from "./confirmations";
import type { Database } from "./database";
import { beforeCommit, countedWhileReading, withStoreFaults } from "./faults";
import { confirmations, orderLines, orders, payments } from "./schema";
import { userFromCookies } from "./user";

export const CATALOG = [
  { sku: "tea", name: "Green tea, 100 g", priceCents: 650 },
  { sku: "mug", name: "Stoneware mug", priceCents: 1_800 },
  { sku: "kettle", name: "Gooseneck kettle", priceCents: 5_400 },
  { sku: "scale", name: "Coffee scale", priceCents: 2_900 },
] as const;

export interface Context {
  req: Request;
  resHeaders: Headers;
  /** From the `uid` cookie; undefined when the request has none. */
  userId: string | undefined;
}

export const t = initTRPC.context<Context>().create({
  transformer: superjson,
  errorFormatter: ({ shape, error }) => ({
    ...shape,
    data: { ...shape.data, idempotency: idempotencyErrorData(error) },
  }),
});

const withUser = t.procedure.use(({ ctx, next }) => {
  if (!ctx.userId) throw new TRPCError({ code: "UNAUTHORIZED", message: "No uid cookie: open the page first." });
  return next({ ctx: { userId: ctx.userId } });
});

export const placeOrderInput = z.object({
  items: z
    .array(z.object({ sku: z.string().min(1).max(64), qty: z.number().int().positive().max(99) }))
    .min(1)
    .max(50),
});

export type OrderItem = z.infer<typeof placeOrderInput>["items"][number];

export const editNoteInput = z.object({
  orderId: z.number().int().positive(),
  /** The order's version the page showed when the edit began. */
  version: z.number().int().positive(),
  note: z.string().max(200),
});

/** Prices the cart; an unknown sku is the client's mistake (404), stored and replayed like any answer. */
function priced(items: OrderItem[]) {
  return items.map(({ sku, qty }) => {
    const product = CATALOG.find((candidate) => candidate.sku === sku);
    if (!product) throw new TRPCError({ code: "NOT_FOUND", message: `There is no product "${sku}".` });
    return { sku, qty, priceCents: product.priceCents };
  });
}

/** Writes one order, its lines and its payment with whatever it is given: the idempotent transaction, or a plain one. */
export async function writeOrder(
  tx: Pick<Database, "insert">,
  userId: string,
  items: OrderItem[],
  paymentReference: string,
) {
  const lines = priced(items);
  const totalCents = lines.reduce((sum, line) => sum + line.priceCents * line.qty, 0);
  const [order] = await tx
    .insert(orders)
    .values({ userId, totalCents })
    .returning({ orderId: orders.id, totalCents: orders.totalCents, createdAt: orders.createdAt });
  if (!order) throw new Error("insert into orders returned no row");
  await tx.insert(orderLines).values(lines.map((line) => ({ ...line, orderId: order.orderId })));
  await tx.insert(payments).values({ orderId: order.orderId, amountCents: totalCents, reference: paymentReference });
  return order;
}

export interface RouterOptions {
  db: Database;
  /** Completed results kept in memory for replays (idemkit's default is 10,000; 0 turns the cache off). */
  replayCacheSize?: number;
}

export function createRouter({ db, replayCacheSize }: RouterOptions) {
  const store = withStoreFaults(drizzleStore({ db }));
  const scope = ({ ctx }: { ctx: { userId: string } }) => ctx.userId;
  const idempotent = withUser.use(
    idempotency({
      store,
      transformer: superjson,
      scope,
      ...(replayCacheSize !== undefined && { replayCacheSize }),
    }),
  );

  return t.router({
    /**
     * What became of one of this user's orders: the page asks after a reload, instead of sending it again. Only
     * placeOrder's outcomes are looked up, under its middleware's scope; any other path is refused.
     */
    idempotencyOutcome: withUser
      .input(outcomeLookupInput)
      .query(outcomeLookup({ store, scope, procedures: ["checkout.placeOrder"], transformer: superjson })),

    checkout: t.router({
      products: t.procedure.query(() => CATALOG),

      placeOrder: idempotent.input(placeOrderInput).mutation(async ({ ctx, input }) => {
        const order = await writeOrder(ctx.idempotency.tx, ctx.userId, input.items, ctx.idempotency.subKey("payment"));
        // Written with the order: the confirmation exists exactly when the order does.
        const placed: OrderPlaced = { orderId: order.orderId };
        await outbox.enqueue(ctx.idempotency, { topic: ORDER_PLACED, payload: placed });
        await beforeCommit(ctx.userId);
        // With its cart: a page that finds the order after a reload (replayed, or looked up) shows what was ordered.
        return { ...order, items: input.items };
      }),

      /**
       * Changes an order's delivery note, if the order is still as the page showed it: an edit begun before
       * another tab saved its own is refused with 409 (not stored, so nothing is replayed), and the page says to
       * reload. The conditional update and the stored answer commit together, like placeOrder.
       */
      editNote: idempotent.input(editNoteInput).mutation(async ({ ctx, input }) => {
        try {
          const version = await updateIfVersion(ctx.idempotency.tx, orders, {
            where: and(eq(orders.id, input.orderId), eq(orders.userId, ctx.userId)),
            version: orders.version,
            expectedVersion: input.version,
            set: { note: input.note },
          });
          return { orderId: input.orderId, note: input.note, version };
        } catch (error) {
          if (!(error instanceof StaleVersionError)) throw error;
          throw new TRPCError({
            code: "CONFLICT",
            message: "This order was changed in another tab or window. Reload to see its note, then edit again.",
            cause: error,
          });
        }
      }),

      orders: withUser.query(async ({ ctx }) => {
        const list = await db
          .select()
          .from(orders)
          .where(eq(orders.userId, ctx.userId))
          .orderBy(desc(orders.id))
          .limit(50);
        if (list.length === 0) return [];
        const lines = await db
          .select()
          .from(orderLines)
          .where(
            inArray(
              orderLines.orderId,
              list.map((order) => order.id),
            ),
          );
        const sent = await db
          .select({ orderId: confirmations.orderId, sentAt: confirmations.sentAt })
          .from(confirmations)
          .where(
            inArray(
              confirmations.orderId,
              list.map((order) => order.id),
            ),
          );
        return list.map((order) => {
          const confirmationsSent = sent.filter((confirmation) => confirmation.orderId === order.id);
          return {
            orderId: order.id,
            totalCents: order.totalCents,
            createdAt: order.createdAt,
            note: order.note,
            version: order.version,
            items: lines
              .filter((line) => line.orderId === order.id)
              .map(({ sku, qty, priceCents }) => ({ sku, qty, priceCents })),
            /** When its confirmation was sent; undefined while it is on its way. */
            confirmedAt: confirmationsSent[0]?.sentAt,
            /** How many confirmations it got: 1 once sent, whatever the retries (never more). */
            confirmationsSent: confirmationsSent.length,
          };
        });
      }),
    }),
  });
}

export type AppRouter = ReturnType<typeof createRouter>;

/**
 * The largest request body the API reads, in bytes: a cart of 50 lines is a few kB. tRPC's fetch adapter reads any
 * size, and Next.js cuts bodies past 10 MB short (which JSON then reports as "Unterminated string"), so the limit
 * is checked here, before either, and answered 413.
 */
export const MAX_BODY_BYTES = 64 * 1024;

/** How long a request's body may take to arrive in full; a client that stalls mid-body is answered 408. */
export const BODY_TIMEOUT_MS = 10_000;

export interface HandlerOptions {
  /** Default BODY_TIMEOUT_MS. */
  bodyTimeoutMs?: number | undefined;
  /** Aborted when the process is shutting down: bodies still arriving are answered 503 at once. */
  stop?: AbortSignal | undefined;
}

/** The answers to a body that was not read, by why. */
const UNREAD: Record<Exclude<BodyOutcome["kind"], "read">, { status: number; code: string; message: string }> = {
  "too-large": {
    status: 413,
    code: "PAYLOAD_TOO_LARGE",
    message: `The request body is larger than ${MAX_BODY_BYTES} bytes.`,
  },
  "timed-out": { status: 408, code: "REQUEST_TIMEOUT", message: "The request body did not arrive in time." },
  "cut-off": { status: 400, code: "BAD_REQUEST", message: "The request body was cut off." },
  stopped: { status: 503, code: "SHUTTING_DOWN", message: "This instance is shutting down: send it again." },
};

/** A Fetch handler serving `router` at `/api/trpc`, the user taken from the `uid` cookie. */
export function createHandler(router: AnyTRPCRouter, { bodyTimeoutMs = BODY_TIMEOUT_MS, stop }: HandlerOptions = {}) {
  return async (req: Request) => {
    const body = await countedWhileReading(readBody(req, { maxBytes: MAX_BODY_BYTES, timeoutMs: bodyTimeoutMs, stop }));
    if (body.kind !== "read") {
      const { status, code, message } = UNREAD[body.kind];
      const headers: HeadersInit = status === 503 ? { "retry-after": "1" } : {};
      return Response.json({ error: { message, code } }, { status, headers });
    }
    return fetchRequestHandler({
      endpoint: "/api/trpc",
      req: body.request,
      router,
      createContext: ({ req: request, resHeaders }): Context => ({
        req: request,
        resHeaders,
        userId: userFromCookies(request.headers.get("cookie")),
      }),
    });
  };
}
