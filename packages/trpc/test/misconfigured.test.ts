/**
 * A database that has no idemkit table (a forgotten migration), or an older one: protected mutations are answered
 * 500 STORE_MISCONFIGURED, never 503 "retry later", which clients would retry for nothing. What is missing and the
 * command that makes it are the operator's: logged once at error level, and never sent to the client, which is told
 * only that nothing ran. Nothing runs.
 */
import { createDatabase, type ServedHandler, serveFetch } from "@idemkit/testkit";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { BUSINESS_TABLES, createApp } from "./app.js";
import { mutate } from "./client.js";

let database: Awaited<ReturnType<typeof createDatabase>>;
let client: postgres.Sql;
const servers: ServedHandler[] = [];

beforeAll(async () => {
  database = await createDatabase(inject("postgresUrl"));
  client = postgres(database.url, { max: 4, onnotice: () => {} });
  await client.unsafe(BUSINESS_TABLES);
});
afterAll(async () => {
  await client?.end({ timeout: 1 });
  await database?.drop();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await client.unsafe("drop table if exists idempotency_keys");
});

describe.each(["atomic", "lease"] as const)("a database without idemkit's table, in %s mode", (mode) => {
  it("answers 500 STORE_MISCONFIGURED, logs the table and the fix once, tells the client neither, and runs nothing", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const app = createApp({ db: drizzle(client), mode });
      const server = await serveFetch(app.handler);
      servers.push(server);
      const first = await mutate(server.url, "placeOrder", { sku: "A", qty: 1 });
      const second = await mutate(server.url, "placeOrder", { sku: "A", qty: 1 });
      for (const answer of [first, second]) {
        expect(answer.status).toBe(500);
        expect(answer.error?.data.idempotency).toEqual({
          code: "STORE_MISCONFIGURED",
          retryable: false,
          resend: "never",
          retryAfterMs: null,
        });
        expect(answer.error?.message).toBe(
          "The server is not set up to protect this request, so it was not run. Its operator has been told.",
        );
        expect(answer.headers.get("retry-after")).toBeNull();
      }
      expect(logged).toHaveBeenCalledTimes(1);
      expect(String(logged.mock.calls[0]?.[0])).toMatch(/relation "idempotency_keys" does not exist.*drizzle-kit/s);
      expect(app.executions.get("placeOrder")).toBeUndefined();
    } finally {
      logged.mockRestore();
    }
  });
});

it("names the migration in the log when the table is from the version whose fence was a plain integer", async () => {
  const logged = vi.spyOn(console, "error").mockImplementation(() => {});
  try {
    await client.unsafe(`create table idempotency_keys (scope text not null, path text not null, key text not null,
      fingerprint text not null, state text not null, fence integer not null, lease_expires_at timestamptz(3),
      expires_at timestamptz(3) not null, response_status integer, response_body text,
      created_at timestamptz(3) not null default now(), primary key (scope, path, key))`);
    const app = createApp({ db: drizzle(client) });
    const server = await serveFetch(app.handler);
    servers.push(server);
    const answer = await mutate(server.url, "placeOrder", { sku: "A", qty: 1 });
    expect(answer.status).toBe(500);
    expect(answer.error?.message).not.toMatch(/0002_fences_never_repeat|idempotency_keys/);
    expect(String(logged.mock.calls[0]?.[0])).toMatch(/0002_fences_never_repeat/);
  } finally {
    logged.mockRestore();
  }
});
