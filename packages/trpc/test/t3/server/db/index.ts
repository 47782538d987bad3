/**
 * As create-t3-app's `db`, on postgres.js at DATABASE_URL; without it, on PGlite (in memory, or in
 * T3_PGLITE_DIR), so the same app runs on both databases.
 */
import { PGlite } from "@electric-sql/pglite";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import * as schema from "./schema.js";

const url = process.env.DATABASE_URL;

export const db: PgDatabase<PgQueryResultHKT, typeof schema> = url
  ? drizzlePostgres(postgres(url, { max: 10, onnotice: () => {} }), { schema })
  : drizzlePglite(new PGlite(process.env.T3_PGLITE_DIR), { schema });
