/**
 * `npm run test:latest`: the newest published version of every peer the peer-range test installs, run as one more
 * end of it (a plain npm install beside the tarballs, type-checked, the store, atomic and outbox suites, the job
 * and Server Action rounds), then a table of the versions and the result. Not part of npm test: its answer changes
 * as the registry does.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PEERS = ["@trpc/server", "@trpc/client", "drizzle-orm", "postgres", "pg-boss", "next", "react", "react-dom"];

const versions = Object.fromEntries(
  PEERS.map((name) => [name, execFileSync("npm", ["view", name, "version"], { encoding: "utf8" }).trim()]),
);
const started = Date.now();
const suite = spawnSync(
  process.execPath,
  ["node_modules/vitest/vitest.mjs", "run", "tooling/packaging/test/peer-ranges.test.ts"],
  { cwd: ROOT, stdio: "inherit", env: { ...process.env, IDEMKIT_PEER_VERSIONS: JSON.stringify(versions) } },
);
const result = suite.status === 0 ? "passed" : "FAILED";
const seconds = Math.round((Date.now() - started) / 1000);

console.log(`\nThe newest peers, ${new Date().toISOString().slice(0, 10)}, Node ${process.versions.node}:\n`);
console.log("| peer | version | result |\n|---|---|---|");
for (const [name, version] of Object.entries(versions)) {
  const on = name === "pg-boss" && Number.parseInt(version, 10) >= 12 ? " (job round on Node 24)" : "";
  console.log(`| \`${name}\` | ${version} | ${result}${on} |`);
}
console.log(`\n${result} in ${seconds} s.`);
process.exit(suite.status ?? 1);
