/**
 * Vitest global setup: one PostgreSQL server for the whole run (DATABASE_URL, or a throwaway one). Test files
 * read its URL with `inject("postgresUrl")` and create a database of their own on it.
 */
import type {} from "vitest";
import type { TestProject } from "vitest/node";
import { startPostgres } from "./postgres.js";

declare module "vitest" {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres();
  project.provide("postgresUrl", server.url);
  return () => server.stop();
}
