import { defineConfig } from "drizzle-kit";

/** Generates the SQL migrations in drizzle/ from the idemkit tables: `npm run db:generate`. */
export default defineConfig({
  dialect: "postgresql",
  schema: ["./packages/drizzle/src/schema.ts", "./packages/outbox/src/outbox-schema.ts"],
  out: "./drizzle",
});
