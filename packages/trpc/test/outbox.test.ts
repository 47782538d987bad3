/**
 * The outbox from a protected procedure over real HTTP: the event exists exactly when the call's writes committed,
 * once however often the call is replayed, and never for an answer that undid its writes or a call that failed.
 */
import { openPostgres, type ServedHandler, serveFetch } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { BUSINESS_TABLES, createApp } from "./app.js";
import { mutate } from "./client.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
let server: ServedHandler;

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"));
  await database.query(BUSINESS_TABLES);
  const app = createApp({ db: database.db });
  server = await serveFetch(app.handler);
});
afterAll(async () => {
  await server.close();
  await database.close();
});

const eventsOf = (user: string) =>
  database.query<{ payload: string }>(
    "select payload from outbox_events where topic = 'order.placed' and payload::jsonb->>'orderId' in " +
      "(select id::text from orders where user_id = $1) order by id",
    [user],
  );
const ordersOf = (user: string) => database.query("select id from orders where user_id = $1", [user]);

describe("an event enqueued by a protected procedure", () => {
  it("exists once the call committed, and once only however often the call is replayed", async () => {
    const user = globalThis.crypto.randomUUID();
    const key = globalThis.crypto.randomUUID();
    const first = await mutate(server.url, "placeOrderAndNotify", { sku: "A", qty: 1 }, { key, user });
    const replayed = await mutate(server.url, "placeOrderAndNotify", { sku: "A", qty: 1 }, { key, user });
    expect(first.status).toBe(200);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    const events = await eventsOf(user);
    expect(events.map((event) => JSON.parse(event.payload))).toEqual([
      { orderId: (first.data as { orderId: number }).orderId, sku: "A" },
    ]);
  });

  it("does not exist for a stored error answer, whose writes were undone, nor for a call that failed", async () => {
    const user = globalThis.crypto.randomUUID();
    const refused = await mutate(server.url, "placeOrderAndNotify", { sku: "unknown", qty: 1 }, { user });
    const crashed = await mutate(server.url, "placeOrderAndNotify", { sku: "crash", qty: 1 }, { user });
    expect([refused.status, crashed.status]).toEqual([404, 500]);
    expect(await ordersOf(user)).toEqual([]);
    expect(
      await database.query("select 1 from outbox_events where payload::jsonb->>'sku' in ('unknown', 'crash')"),
    ).toEqual([]);
  });
});
