/**
 * A pg-boss job sent from a protected tRPC procedure over real HTTP: it exists once the call committed, once
 * however often the call is replayed, and not at all for an answer whose writes were undone.
 */
import { drizzleStore } from "@idemkit/drizzle";
import { openPostgres, type ServedHandler, serveFetch } from "@idemkit/testkit";
import { idempotency } from "@idemkit/trpc";
import { initTRPC, TRPCError } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { sql } from "drizzle-orm";
import PgBoss from "pg-boss";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { createJobs } from "../src/index.js";

const QUEUE = "order-confirmation";

let database: Awaited<ReturnType<typeof openPostgres>>;
let boss: PgBoss;
let server: ServedHandler;

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 4 });
  await database.query("create table orders (id serial primary key, sku text not null)");
  boss = new PgBoss({ connectionString: database.url, max: 2, schedule: false, supervise: false });
  await boss.start();
  await boss.createQueue(QUEUE, { name: QUEUE });
  const jobs = createJobs({ boss, db: database.db });

  const t = initTRPC.context<{ req: Request; resHeaders: Headers }>().create();
  const protectedProcedure = t.procedure.use(
    idempotency({ store: drizzleStore({ db: database.db }), scope: () => "shop" }),
  );
  const router = t.router({
    placeOrder: protectedProcedure
      .input((input) => input as { sku: string })
      .mutation(async ({ ctx, input }) => {
        const [row] = await ctx.idempotency.tx.execute<{ id: number }>(
          sql`insert into orders (sku) values (${input.sku}) returning id`,
        );
        const orderId = Number(row?.id);
        await jobs.send(ctx.idempotency, QUEUE, { orderId }, { key: `order-confirmation:${orderId}` });
        if (input.sku === "unknown") throw new TRPCError({ code: "NOT_FOUND", message: "No such product" });
        return { orderId };
      }),
  });
  server = await serveFetch((req) =>
    fetchRequestHandler({
      endpoint: "/trpc",
      req,
      router,
      createContext: ({ req, resHeaders }) => ({ req, resHeaders }),
    }),
  );
});
afterAll(async () => {
  await server.close();
  await boss.stop({ graceful: false, wait: true });
  await database.close();
});

const placeOrder = (sku: string, key: string) =>
  fetch(`${server.url}/trpc/placeOrder`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ sku }),
  });
const jobsFor = (sku: string) =>
  database.query(
    "select j.data from pgboss.job j join orders o on o.id = (j.data->>'orderId')::int where j.name = $1 and o.sku = $2",
    [QUEUE, sku],
  );

it("creates the job once the call committed, and once only however often the call is replayed", async () => {
  const key = globalThis.crypto.randomUUID();
  const first = await placeOrder("book", key);
  const replayed = await placeOrder("book", key);
  expect([first.status, replayed.status]).toEqual([200, 200]);
  expect(replayed.headers.get("idempotent-replayed")).toBe("true");
  const { result } = (await first.json()) as { result: { data: { orderId: number } } };
  expect(await jobsFor("book")).toEqual([{ data: { orderId: result.data.orderId } }]);
});

it("creates no job for a stored error answer, whose writes were undone", async () => {
  const key = globalThis.crypto.randomUUID();
  expect((await placeOrder("unknown", key)).status).toBe(404);
  expect((await placeOrder("unknown", key)).status).toBe(404);
  expect(await database.query("select 1 from orders where sku = 'unknown'")).toEqual([]);
  expect(
    await database.query(
      "select 1 from pgboss.job where name = $1 and data ? 'orderId' and (data->>'orderId')::int not in (select id from orders)",
      [QUEUE],
    ),
  ).toEqual([]);
});
