/**
 * The database: PostgreSQL through postgres.js, its connections guarded so that a connection the database ends
 * (a crash, a restart) fails cleanly instead of meeting postgres.js 3.4's defects there.
 */
// #region db
import { guardedConnections } from "@idemkit/postgres-js-guard";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { env } from "./env";

const client = postgres(env.databaseUrl, guardedConnections({ max: 10, ssl: "require" }));
export const db = drizzle(client);
// #endregion db
