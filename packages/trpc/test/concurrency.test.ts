/**
 * Duplicates over real HTTP against a real PostgreSQL server. Fifty identical requests at once through a pool of 10
 * connections: the procedure body runs exactly once, and every answer is that result (replayed) or a 409 with
 * Retry-After. A storm of 200 duplicates of one held call across two instances with pools of 2: another user's call
 * is served while they wait, since waiting holds no connection.
 */
import { drizzleStore } from "@idemkit/drizzle";
import { gate, openPostgres, type ServedHandler, serveFetch } from "@idemkit/testkit";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { BUSINESS_TABLES, createApp } from "./app.js";
import { mutate } from "./client.js";

const DUPLICATES = 50;
let database: Awaited<ReturnType<typeof openPostgres>>;

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 10 });
  await database.query(BUSINESS_TABLES);
});
afterAll(() => database.close());

describe.each(["atomic", "lease"] as const)(`%s mode, ${DUPLICATES} concurrent duplicates`, (mode) => {
  it("runs the procedure once; every other answer is the same result or a 409 with Retry-After", async () => {
    // Hold the first execution until every duplicate has reached the server, so they really overlap it.
    const { opened: everyone, open: everyoneArrived } = gate();
    let arrived = 0;
    const app = createApp({ db: database.db, mode, hold: () => everyone });
    let server: ServedHandler | undefined;
    try {
      server = await serveFetch((request) => {
        if (++arrived === DUPLICATES) everyoneArrived();
        return app.handler(request);
      });
      const url = server.url;
      const userId = `concurrent-${mode}`;
      const key = globalThis.crypto.randomUUID();
      const answers = await Promise.all(
        Array.from({ length: DUPLICATES }, () =>
          mutate(url, "placeOrder", { sku: "A", qty: 1 }, { key, user: userId }),
        ),
      );

      expect(app.executions.get("placeOrder")).toBe(1);
      const [row] = await database.query<{ n: number }>("select count(*)::int as n from orders where user_id = $1", [
        userId,
      ]);
      expect(row?.n).toBe(1);

      const succeeded = answers.filter((answer) => answer.status === 200);
      const conflicts = answers.filter((answer) => answer.status === 409);
      expect(succeeded.length + conflicts.length).toBe(DUPLICATES);
      expect(succeeded.filter((answer) => answer.headers.get("idempotent-replayed") === null)).toHaveLength(1);
      for (const answer of succeeded) expect(answer.text).toBe(succeeded[0]?.text);
      for (const answer of conflicts) {
        expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        expect(answer.error?.data.idempotency).toMatchObject({ code: "IN_PROGRESS", retryable: true });
      }
      // Atomic mode waits on the first transaction instead of refusing: everyone gets the result.
      if (mode === "atomic") expect(conflicts).toHaveLength(0);
    } finally {
      await server?.close();
    }
  });
});

const STORM = 200;

describe(`a storm of ${STORM} duplicates of one slow call, across two instances with pools of 2`, () => {
  it("does not keep another user's call from being served while it waits, and the slow call runs once", async () => {
    const { opened: released, open: release } = gate();
    const stormKey = globalThis.crypto.randomUUID();
    // Two instances of the app on one database, each with its own pool.
    const pools = [1, 2].map(() => postgres(database.url, { max: 2, onnotice: () => {} }));
    const apps = pools.map((pool) =>
      createApp({
        db: drizzle(pool),
        // Long enough that no duplicate gives up while 200 requests are served by one test process.
        store: drizzleStore({ db: drizzle(pool), waitMs: 30_000 }),
        hold: (key) => (key === stormKey ? released : undefined),
      }),
    );
    const { opened: everyone, open: everyoneArrived } = gate();
    let arrived = 0;
    const servers: ServedHandler[] = [];
    try {
      for (const app of apps) {
        servers.push(
          await serveFetch((request) => {
            if (request.headers.get("idempotency-key") === stormKey && ++arrived === STORM + 1) everyoneArrived();
            return app.handler(request);
          }),
        );
      }
      const [a, b] = servers.map((server) => server.url) as [string, string];
      const user = "storm";
      const order = { sku: "A", qty: 1 };
      const first = mutate(a, "placeOrder", order, { key: stormKey, user });
      let stormAnswered = 0;
      const storm = Array.from({ length: STORM }, (_, n) =>
        mutate(n % 2 === 0 ? a : b, "placeOrder", order, { key: stormKey, user }).finally(() => {
          stormAnswered++;
        }),
      );
      await everyone;

      // Another user's call on each instance is served while the slow call still holds every duplicate.
      for (const url of [a, b]) {
        const other = await mutate(url, "placeOrder", order, { user: "someone else" });
        expect(other.status).toBe(200);
      }
      expect(stormAnswered).toBe(0);

      release();
      const answers = await Promise.all([first, ...storm]);
      expect(answers.map((answer) => answer.status)).toEqual(Array(STORM + 1).fill(200));
      expect(answers.filter((answer) => answer.headers.get("idempotent-replayed") === "true")).toHaveLength(STORM);
      for (const answer of answers) expect(answer.text).toBe(answers[0]?.text);
      const runs = apps.reduce((sum, app) => sum + (app.executions.get("placeOrder") ?? 0), 0);
      // One run of the slow call plus one unrelated call on each instance.
      expect(runs).toBe(3);
      const [row] = await database.query<{ n: number }>("select count(*)::int as n from orders where user_id = $1", [
        user,
      ]);
      expect(row?.n).toBe(1);
    } finally {
      release();
      await Promise.all(servers.map((server) => server.close()));
      await Promise.all(pools.map((pool) => pool.end()));
    }
  }, 60_000);
});
