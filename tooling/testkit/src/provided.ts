/** What the global setup provides to test files, typed for `inject()`. */
import type {} from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** URL of the PostgreSQL server of this test run (maintenance database). */
    postgresUrl: string;
  }
}
