/**
 * Vitest global setup: one PostgreSQL server for the whole run (DATABASE_URL, or a throwaway one). Test files
 * read its URL with `inject("postgresUrl")` and create a database of their own on it.
 */
import type { TestProject } from "vitest/node";
import "./provided.js";
import { startPostgres } from "./postgres.js";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startPostgres();
  project.provide("postgresUrl", server.url);
  return () => server.stop();
}
