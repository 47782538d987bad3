import { defineConfig } from "drizzle-kit";

/** Generates the demo's SQL migrations in drizzle/ from its schema: `npm run db:generate -w @idemkit/web`. */
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/server/schema.ts",
  out: "./drizzle",
});
