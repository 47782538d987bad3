/**
 * One contract, three ways in: the tRPC middleware (tRPC's fetch adapter), the Fetch adapter as a Next.js route
 * handler (`export const POST = withIdempotency(...)`), and the same in a Hono app. Each row of the table below runs
 * against each, over real HTTP, with drizzleStore on PostgreSQL and on PGlite: statuses, bodies, headers and the
 * effects written through the idempotent transaction.
 */
import type { IdempotencyMode } from "@idemkit/core";
import { withIdempotency } from "@idemkit/core/fetch";
import { drizzleStore } from "@idemkit/drizzle";
import { type Driver, gate, type NotesDatabase, notesDatabases, serveFetch } from "@idemkit/testkit";
import { initTRPC, TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { Hono } from "hono";
import postgres from "postgres";
import { afterEach, describe, expect, it } from "vitest";
import { idempotency, idempotencyErrorData } from "../src/index.js";

const databases = notesDatabases(4);
const closers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((closer) => closer.close()));
});

/** An endpoint that places an order: a note written through the transaction, or a refusal of the item. */
interface Shop {
  /** Sends an order for `item` as `user`, with `key` as its Idempotency-Key (none when undefined). */
  order(item: string, key: string | undefined, user?: string): Promise<Response>;
  /** The idempotency code of a refusal, read where the adapter puts it. */
  codeOf(answer: Response): Promise<string | undefined>;
  runs(): number;
}

/** How a shop is set up: its store's database (default, the file's), its mode, and what an order waits for. */
interface ShopOptions {
  db?: NotesDatabase["db"];
  mode?: IdempotencyMode;
  /** Awaited by each order once it has started, before it answers. */
  held?: Promise<void>;
}

/** What the order does with its item, the same behind each adapter. */
type Outcome = { placed: string } | { notFound: string } | { failed: string };

function outcomeOf(item: string): Outcome {
  if (item === "unknown") return { notFound: "no such item" };
  if (item === "broken") return { failed: "the shop failed" };
  return { placed: item };
}

/** Writes the order's note: through the idempotent transaction in atomic mode, through the database in lease mode. */
function writeNote(database: NotesDatabase, tx: NotesDatabase["db"] | undefined, key: string) {
  return (tx ?? database.db).execute(sql`insert into notes (key) values (${key})`);
}

/** The Fetch adapter's handler: what a route handler exports as POST, and what Hono mounts. */
function fetchHandler(database: NotesDatabase, counted: () => number, options: ShopOptions) {
  return withIdempotency(
    async (request, { tx, key }) => {
      counted();
      await options.held;
      const { item } = (await request.json()) as { item: string };
      const outcome = outcomeOf(item);
      if ("notFound" in outcome) return Response.json({ error: outcome.notFound }, { status: 404 });
      if ("failed" in outcome) return Response.json({ error: outcome.failed }, { status: 500 });
      await writeNote(database, tx as NotesDatabase["db"] | undefined, key);
      return Response.json({ item, at: globalThis.crypto.randomUUID() });
    },
    {
      store: drizzleStore({ db: options.db ?? database.db }),
      mode: options.mode ?? "atomic",
      scope: (request) => request.headers.get("x-user") ?? "anonymous",
    },
  );
}

const fetchCodeOf = async (answer: Response) => ((await answer.json()) as { error?: { code?: string } }).error?.code;

type Adapter = (database: NotesDatabase, options: ShopOptions) => Promise<{ url: string; shop: Omit<Shop, "order"> }>;

const ADAPTERS: Record<string, Adapter> = {
  "the tRPC middleware": async (database, options) => {
    let runs = 0;
    const t = initTRPC.context<{ req: Request; resHeaders: Headers }>().create({
      errorFormatter: ({ shape, error }) => ({
        ...shape,
        data: { ...shape.data, idempotency: idempotencyErrorData(error) },
      }),
    });
    const protectedProcedure = t.procedure.use(
      idempotency({
        store: drizzleStore({ db: options.db ?? database.db }),
        mode: options.mode ?? "atomic",
        scope: ({ ctx }) => ctx.req.headers.get("x-user") ?? "anonymous",
      }),
    );
    const router = t.router({
      order: protectedProcedure
        .input((value) => value as { item: string })
        .mutation(async ({ input, ctx }) => {
          runs++;
          await options.held;
          const outcome = outcomeOf(input.item);
          if ("notFound" in outcome) throw new TRPCError({ code: "NOT_FOUND", message: outcome.notFound });
          if ("failed" in outcome) throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: outcome.failed });
          await writeNote(database, ctx.idempotency.tx as NotesDatabase["db"] | undefined, ctx.idempotency.key);
          return { item: input.item, at: globalThis.crypto.randomUUID() };
        }),
    });
    const server = await serveFetch((req) =>
      fetchRequestHandler({
        endpoint: "/trpc",
        router,
        req,
        createContext: ({ req, resHeaders }) => ({ req, resHeaders }),
      }),
    );
    closers.push(server);
    return {
      url: `${server.url}/trpc/order`,
      shop: {
        runs: () => runs,
        codeOf: async (answer) =>
          ((await answer.json()) as { error?: { data?: { idempotency?: { code?: string } } } }).error?.data?.idempotency
            ?.code,
      },
    };
  },
  "a Next.js route handler": async (database, options) => {
    let runs = 0;
    const POST = fetchHandler(database, () => runs++, options);
    const server = await serveFetch((request) => POST(request));
    closers.push(server);
    return { url: `${server.url}/api/orders`, shop: { runs: () => runs, codeOf: fetchCodeOf } };
  },
  "a Hono app": async (database, options) => {
    let runs = 0;
    const placeOrder = fetchHandler(database, () => runs++, options);
    const app = new Hono();
    app.post("/orders", (c) => placeOrder(c.req.raw));
    const server = await serveFetch(async (request) => app.fetch(request));
    closers.push(server);
    return { url: `${server.url}/orders`, shop: { runs: () => runs, codeOf: fetchCodeOf } };
  },
};

async function open(
  adapter: string,
  driver: Driver,
  options: ShopOptions = {},
): Promise<Shop & { notes(key: string): Promise<number> }> {
  const database = databases[driver];
  const { url, shop } = await (ADAPTERS[adapter] as Adapter)(database, options);
  return {
    ...shop,
    order: (item, key, user = "alice") =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-user": user,
          ...(key === undefined ? {} : { "idempotency-key": key }),
        },
        body: JSON.stringify({ item }),
      }),
    async notes(key) {
      const rows = await database.query<{ n: number }>("select count(*)::int as n from notes where key = $1", [key]);
      return rows[0]?.n ?? 0;
    },
  };
}

const newKey = () => globalThis.crypto.randomUUID();

describe.each(Object.keys(ADAPTERS))("the HTTP contract through %s", (adapter) => {
  describe.each(["postgres.js", "PGlite"] satisfies Driver[])("on %s", (driver) => {
    it("runs the first request; a duplicate gets its status and body, marked Idempotent-Replayed", async () => {
      const shop = await open(adapter, driver);
      const key = newKey();
      const first = await shop.order("tea", key);
      const firstBody = await first.text();
      expect(first.status).toBe(200);
      expect(first.headers.get("idempotent-replayed")).toBeNull();
      const again = await shop.order("tea", key);
      expect([again.status, await again.text()]).toEqual([200, firstBody]);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect([shop.runs(), await shop.notes(key)]).toEqual([1, 1]);
    });

    it("runs concurrent duplicates once, and each gets the one answer", async () => {
      const shop = await open(adapter, driver);
      const key = newKey();
      const answers = await Promise.all(Array.from({ length: 6 }, () => shop.order("tea", key)));
      const bodies = await Promise.all(answers.map((answer) => answer.text()));
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200));
      expect(new Set(bodies).size).toBe(1);
      expect([shop.runs(), await shop.notes(key)]).toEqual([1, 1]);
    });

    it("refuses a missing, malformed or oversized key with 400 and runs nothing", async () => {
      const shop = await open(adapter, driver);
      for (const [key, code] of [
        [undefined, "KEY_MISSING"],
        ["not a key", "KEY_INVALID"],
        ["k".repeat(300), "KEY_INVALID"],
      ] as const) {
        const answer = await shop.order("tea", key);
        expect([answer.status, await shop.codeOf(answer)]).toEqual([400, code]);
      }
      expect(shop.runs()).toBe(0);
    });

    it("refuses the key with another input with 422, and keeps the first answer", async () => {
      const shop = await open(adapter, driver);
      const key = newKey();
      const firstBody = await (await shop.order("tea", key)).text();
      const other = await shop.order("kettle", key);
      expect([other.status, await shop.codeOf(other)]).toEqual([422, "FINGERPRINT_MISMATCH"]);
      expect(await (await shop.order("tea", key)).text()).toBe(firstBody);
      expect([shop.runs(), await shop.notes(key)]).toEqual([1, 1]);
    });

    it("replays a stored 4xx, and releases a 5xx so that its retry runs again", async () => {
      const shop = await open(adapter, driver);
      const notFound = newKey();
      expect((await shop.order("unknown", notFound)).status).toBe(404);
      const replayed = await shop.order("unknown", notFound);
      expect([replayed.status, replayed.headers.get("idempotent-replayed")]).toEqual([404, "true"]);
      expect(shop.runs()).toBe(1);
      const failed = newKey();
      expect((await shop.order("broken", failed)).status).toBe(500);
      const retried = await shop.order("broken", failed);
      expect([retried.status, retried.headers.get("idempotent-replayed")]).toEqual([500, null]);
      expect(shop.runs()).toBe(3);
    });

    it("keeps another user's request with the same key apart: it runs as that user's own", async () => {
      const shop = await open(adapter, driver);
      const key = newKey();
      await shop.order("tea", key, "alice");
      const bobs = await shop.order("kettle", key, "bob");
      expect([bobs.status, bobs.headers.get("idempotent-replayed")]).toEqual([200, null]);
      expect([shop.runs(), await shop.notes(key)]).toEqual([2, 2]);
    });
    it("in lease mode, answers a duplicate that arrives while the first runs 409 with Retry-After, then replays", async () => {
      const first = gate();
      const shop = await open(adapter, driver, { mode: "lease", held: first.opened });
      const key = newKey();
      const running = shop.order("tea", key);
      await expect.poll(() => shop.runs()).toBe(1);
      const duplicate = await shop.order("tea", key);
      expect(duplicate.status).toBe(409);
      expect(duplicate.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(await shop.codeOf(duplicate)).toBe("IN_PROGRESS");
      first.open();
      const firstBody = await (await running).text();
      const replay = await shop.order("tea", key);
      expect([replay.status, await replay.text(), replay.headers.get("idempotent-replayed")]).toEqual([
        200,
        firstBody,
        "true",
      ]);
      expect([shop.runs(), await shop.notes(key)]).toEqual([1, 1]);
    });

    it("answers 503 STORE_UNAVAILABLE while the database is away, and runs nothing", async () => {
      const away = postgres("postgres://idemkit@127.0.0.1:1/away", { max: 1, connect_timeout: 1, onnotice: () => {} });
      closers.push({ close: () => away.end({ timeout: 0 }) });
      const shop = await open(adapter, driver, { db: drizzle({ client: away }) as unknown as NotesDatabase["db"] });
      const answer = await shop.order("tea", newKey());
      expect([answer.status, await shop.codeOf(answer)]).toEqual([503, "STORE_UNAVAILABLE"]);
      expect(shop.runs()).toBe(0);
    });
  });
});
