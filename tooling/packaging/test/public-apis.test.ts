/**
 * The packages stand on tRPC's and Drizzle's public APIs only, so their peer ranges can follow those libraries'
 * releases (drizzle-orm 1.0's release candidates included) instead of their internals. What the packages may
 * import from each library is listed here; reaching into a database's or transaction's internals (`db._`, a
 * session, `prepareQuery`) or tRPC's `unstable-core-do-not-import` fails this test, with the file and line.
 */
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const PACKAGES = fileURLToPath(new URL("../../../packages/", import.meta.url));

/** The entry points of tRPC and Drizzle that the packages may import: each one documented. */
const PUBLIC_ENTRIES = new Set([
  "@trpc/server",
  // `observable`, for links; `getHTTPStatusCodeFromError`, for a code's status: both as tRPC's docs import them.
  "@trpc/server/observable",
  "@trpc/server/http",
  "@trpc/client",
  "@trpc/react-query",
  // `TRPCContext`, the context `createTRPCReact`'s Provider fills: an entry of the package's exports map.
  "@trpc/react-query/shared",
  "@trpc/tanstack-react-query",
  "drizzle-orm",
  "drizzle-orm/pg-core",
]);

/** What reaches into a Drizzle database's or tRPC's internals. */
const INTERNALS = [
  { pattern: /\b_\.(session|dialect|schema|fullSchema)\b/, what: "a Drizzle database's internals (`_`)" },
  { pattern: /\bprepareQuery\b/, what: "a Drizzle session's prepareQuery" },
  { pattern: /\bentityKind\b/, what: "Drizzle's entityKind, which tells its internal classes apart" },
  { pattern: /\bmiddlewareMarker\b|\bmarker:\s*(undefined|["'])/, what: "tRPC's middleware result marker" },
];

async function sourceFiles(directory: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) files.push(...(await sourceFiles(path)));
    else if (/\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name)) files.push(path);
  }
  return files;
}

it("imports only the public entry points of tRPC and Drizzle, and reaches into neither's internals", async () => {
  const found: string[] = [];
  for (const name of await readdir(PACKAGES)) {
    for (const file of await sourceFiles(join(PACKAGES, name, "src"))) {
      const lines = (await readFile(file, "utf8")).split("\n");
      lines.forEach((line, index) => {
        const where = `${relative(PACKAGES, file)}:${index + 1}`;
        for (const [, specifier = ""] of line.matchAll(/from "((?:@trpc|drizzle-orm)[^"]*)"/g)) {
          if (!PUBLIC_ENTRIES.has(specifier)) found.push(`${where} imports ${specifier}`);
        }
        for (const { pattern, what } of INTERNALS) {
          if (pattern.test(line)) found.push(`${where} uses ${what}`);
        }
      });
    }
  }
  expect(found).toEqual([]);
});
