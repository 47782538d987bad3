/**
 * The middleware behind tRPC's Node adapter (standalone), whose context carries Node's `req`/`res` instead of a
 * Fetch Request and `resHeaders`: the key is read and the replay marked without any `http` option.
 */
import type { AddressInfo } from "node:net";
import { memoryStore } from "@idemkit/core";
import { initTRPC, TRPCError } from "@trpc/server";
import { type CreateHTTPContextOptions, createHTTPServer } from "@trpc/server/adapters/standalone";
import { afterAll, beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { idempotency } from "../src/index.js";

type Context = CreateHTTPContextOptions;
const t = initTRPC.context<Context>().create();
let runs = 0;
let failures = 0;
const router = t.router({
  fail: t.procedure
    .use(
      idempotency({
        store: memoryStore(),
        scope: () => "everyone",
        storeServerErrors: true,
      }),
    )
    .mutation(() => {
      failures++;
      throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: "the ledger is closed" });
    }),
  add: t.procedure
    .use(idempotency({ store: memoryStore(), scope: ({ ctx }: { ctx: Context }) => String(ctx.req.headers["x-user"]) }))
    .input(z.object({ n: z.number() }))
    .mutation(({ input }) => {
      runs++;
      return { doubled: input.n * 2 };
    }),
});

const server = createHTTPServer({ router, createContext: (options) => options });
let url: string;
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function add(key: string | undefined) {
  return fetch(`${url}/add`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-user": "node", ...(key && { "idempotency-key": key }) },
    body: JSON.stringify({ n: 21 }),
  });
}

it("reads the key from IncomingMessage headers and marks replays through ServerResponse", async () => {
  const key = globalThis.crypto.randomUUID();
  const first = await add(key);
  const second = await add(key);
  expect(first.status).toBe(200);
  expect(second.headers.get("idempotent-replayed")).toBe("true");
  expect(await second.json()).toEqual(await first.json());
  expect(runs).toBe(1);
  expect((await add(undefined)).status).toBe(400);
});

it("with storeServerErrors, stores a 5xx and replays it instead of running again", async () => {
  const key = globalThis.crypto.randomUUID();
  const call = () =>
    fetch(`${url}/fail`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": key } });
  const first = await call();
  const second = await call();
  expect(first.status).toBe(500);
  expect(second.status).toBe(500);
  expect(second.headers.get("idempotent-replayed")).toBe("true");
  expect(((await second.json()) as { error: { message: string } }).error.message).toBe("the ledger is closed");
  expect(failures).toBe(1);
});

it("does not burn the key on a body that cannot be parsed: the corrected retry runs", async () => {
  const key = globalThis.crypto.randomUUID();
  const before = runs;
  const garbled = await fetch(`${url}/add`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-user": "node", "idempotency-key": key },
    body: '{"n": 21',
  });
  expect(garbled.status).toBeGreaterThanOrEqual(400);
  expect(garbled.headers.get("idempotent-replayed")).toBeNull();
  const corrected = await add(key);
  expect(corrected.status).toBe(200);
  expect(corrected.headers.get("idempotent-replayed")).toBeNull();
  expect(runs).toBe(before + 1);
});
