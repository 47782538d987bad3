import { defineConfig } from "drizzle-kit";

/** Generates the SQL migrations in drizzle/ from the idemkit table: `npm run db:generate`. */
export default defineConfig({
  dialect: "postgresql",
  schema: "./packages/drizzle/src/schema.ts",
  out: "./drizzle",
});
