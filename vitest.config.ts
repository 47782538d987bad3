import { defineConfig } from "vitest/config";

/** Tests import workspace packages from source through the `@idemkit/source` export condition: no build needed. */
export default defineConfig({
  resolve: { conditions: ["@idemkit/source"] },
  ssr: { resolve: { conditions: ["@idemkit/source"] } },
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "packages/*/test/**/*.test.ts",
      "apps/*/test/**/*.test.ts",
      "tooling/*/test/**/*.test.ts",
    ],
    globalSetup: ["tooling/testkit/src/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
