/**
 * The three drivers a test file runs on, each a fresh database with a `notes` table for its procedures to write
 * to, opened before the file's tests and closed after them.
 */

import { afterAll, beforeAll, inject } from "vitest";
import { openNodePostgres, openPglite, openPostgres } from "./databases.js";

export type NotesDatabase = Awaited<ReturnType<typeof openPostgres | typeof openNodePostgres | typeof openPglite>>;
export type Driver = "postgres.js" | "node-postgres" | "PGlite";

/** Registers the file's setup and returns the databases by driver; `poolSize` connections on the PostgreSQL ones. */
export function notesDatabases(poolSize: number): Record<Driver, NotesDatabase> {
  const databases = {} as Record<Driver, NotesDatabase>;
  beforeAll(async () => {
    const [postgresJs, nodePostgres, pglite] = await Promise.all([
      openPostgres(inject("postgresUrl"), { max: poolSize }),
      openNodePostgres(inject("postgresUrl"), { max: poolSize }),
      openPglite(),
    ]);
    Object.assign(databases, { "postgres.js": postgresJs, "node-postgres": nodePostgres, PGlite: pglite });
    for (const database of Object.values(databases)) {
      await database.query("create table notes (id serial primary key, key text not null)");
    }
  });
  afterAll(async () => {
    await Promise.all(Object.values(databases).map((database) => database.close()));
  });
  return databases;
}
