import { describeStoreConformance } from "@idemkit/core/testing";
import { openPglite, openPostgres } from "@idemkit/testkit";
import { afterAll, beforeAll, inject } from "vitest";
import { drizzleStore } from "../src/index.js";

let pglite: Awaited<ReturnType<typeof openPglite>>;
let server: Awaited<ReturnType<typeof openPostgres>>;

beforeAll(async () => {
  [pglite, server] = await Promise.all([openPglite(), openPostgres(inject("postgresUrl"))]);
});
afterAll(async () => {
  await Promise.all([pglite?.close(), server?.close()]);
});

describeStoreConformance("drizzleStore on PGlite", async () => ({ store: drizzleStore({ db: pglite.db }) }));
describeStoreConformance("drizzleStore on PostgreSQL (postgres.js)", async () => ({
  store: drizzleStore({ db: server.db }),
}));
