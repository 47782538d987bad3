#!/usr/bin/env node
/**
 * The scripts every published package runs from its own folder, kept in one place:
 * - `build`: a fresh `dist/` from `tsconfig.build.json` (no stale files from deleted sources reach a tarball), with
 *   the package's `bin` files made executable, as npm will install them.
 * - `prepack`: the repository's LICENSE beside the package's own README, so each tarball carries both.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";

const command = process.argv[2];
if (command === "build") {
  rmSync("dist", { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { stdio: "inherit" });
  const { bin = {} } = JSON.parse(readFileSync("package.json", "utf8"));
  for (const file of typeof bin === "string" ? [bin] : Object.values(bin)) chmodSync(file, 0o755);
} else if (command === "prepack") {
  copyFileSync(new URL("../LICENSE", import.meta.url), "LICENSE");
} else {
  console.error("usage: node tooling/package-scripts.mjs build|prepack");
  process.exit(2);
}
