/**
 * A stale edit over real HTTP: two edits based on one version, with keys of their own. The first is stored and
 * replayed; the second is answered 409 and not stored, so its retry runs again (and is refused again) rather than
 * being replayed, and the row keeps the first edit.
 */
import { openPostgres, type ServedHandler, serveFetch } from "@idemkit/testkit";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { CARTS_TABLE, createApp } from "./app.js";
import { mutate } from "./client.js";

let database: Awaited<ReturnType<typeof openPostgres>>;
let server: ServedHandler;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"));
  await database.query(CARTS_TABLE);
  app = createApp({ db: database.db });
  server = await serveFetch(app.handler);
});
afterAll(async () => {
  await server.close();
  await database.close();
});

it("answers an edit based on a version that moved on 409, stores nothing for it, and keeps the first edit", async () => {
  const [cart] = await database.query<{ id: number }>("insert into carts (note) values ('tea') returning id");
  const id = Number(cart?.id);
  const first = { key: globalThis.crypto.randomUUID() };
  const second = { key: globalThis.crypto.randomUUID() };

  const applied = await mutate(server.url, "renameCart", { id, version: 1, note: "tea and a mug" }, first);
  const stale = await mutate(server.url, "renameCart", { id, version: 1, note: "a kettle" }, second);
  expect(applied.status).toBe(200);
  expect(applied.data).toEqual({ version: 2 });
  expect(stale.status).toBe(409);
  expect(stale.error?.message).toMatch(/no longer at version 1/);

  const staleAgain = await mutate(server.url, "renameCart", { id, version: 1, note: "a kettle" }, second);
  const appliedAgain = await mutate(server.url, "renameCart", { id, version: 1, note: "tea and a mug" }, first);
  expect(staleAgain.status).toBe(409);
  expect(staleAgain.headers.get("idempotent-replayed")).toBeNull();
  expect(appliedAgain.headers.get("idempotent-replayed")).toBe("true");
  expect(appliedAgain.data).toEqual({ version: 2 });
  // The first edit ran once; the stale one ran each time it was sent.
  expect(app.executions.get("renameCart")).toBe(3);
  expect(await database.query("select note, version from carts where id = $1", [id])).toEqual([
    { note: "tea and a mug", version: 2 },
  ]);
});
