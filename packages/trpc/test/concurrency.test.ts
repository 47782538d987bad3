/**
 * Fifty identical requests at once, over real HTTP, through a pool of 10 connections to a real PostgreSQL
 * server: the procedure body must run exactly once, and every answer must be that result (replayed) or a 409
 * with Retry-After.
 */
import { openPostgres, type ServedHandler, serveFetch } from "@idemkit/testkit";
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
    let arrived = 0;
    let everyoneArrived!: () => void;
    const everyone = new Promise<void>((resolve) => {
      everyoneArrived = resolve;
    });
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
