import { describeStoreConformance } from "@idemkit/core/testing";
import { openNodePostgres, openPglite, openPostgres } from "@idemkit/testkit";
import { afterAll, beforeAll, inject } from "vitest";
import { drizzleStore } from "../src/index.js";

let pglite: Awaited<ReturnType<typeof openPglite>>;
let server: Awaited<ReturnType<typeof openPostgres>>;
let nodePostgres: Awaited<ReturnType<typeof openNodePostgres>>;

beforeAll(async () => {
  [pglite, server, nodePostgres] = await Promise.all([
    openPglite(),
    openPostgres(inject("postgresUrl")),
    openNodePostgres(inject("postgresUrl")),
  ]);
});
afterAll(async () => {
  await Promise.all([pglite?.close(), server?.close(), nodePostgres?.close()]);
});

describeStoreConformance("drizzleStore on PGlite", async () => ({ store: drizzleStore({ db: pglite.db }) }));
describeStoreConformance("drizzleStore on PostgreSQL (postgres.js)", async () => ({
  store: drizzleStore({ db: server.db }),
}));
describeStoreConformance("drizzleStore on PostgreSQL (node-postgres)", async () => ({
  store: drizzleStore({ db: nodePostgres.db }),
}));
