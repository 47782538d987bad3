/**
 * `npm run test:latest`: the newest combination of the peers the peer-range test installs that npm resolves without
 * flags, run as one more end of it (a plain npm install beside the tarballs, type-checked, the store, atomic and
 * outbox suites, the job and Server Action rounds), then a table of the versions and the result. Each peer is at
 * its newest, but where another of them takes it only at some versions (`@trpc/tanstack-react-query` takes
 * `@trpc/client` and `@trpc/server` at exactly its own), at the newest of those, as a user who installs them
 * together must pin it. Not part of npm test: its answer changes as the registry does.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PEERS = [
  "@trpc/server",
  "@trpc/client",
  "@trpc/tanstack-react-query",
  "@tanstack/react-query",
  "drizzle-orm",
  "postgres",
  "pg-boss",
  "next",
  "react",
  "react-dom",
];

/** What `npm view <spec> <field> --json` prints, parsed; undefined when it prints nothing. */
function view(spec: string, field: string): unknown {
  const printed = execFileSync("npm", ["view", spec, field, "--json"], { encoding: "utf8" }).trim();
  return printed ? JSON.parse(printed) : undefined;
}

/** Orders two versions as semver does, for the plain `major.minor.patch[-pre]` the registry holds here. */
function byVersion(a: string, b: string): number {
  const [mainA = "", preA] = a.split("-", 2);
  const [mainB = "", preB] = b.split("-", 2);
  const parts = (main: string) => main.split(".").map(Number);
  const [x, y] = [parts(mainA), parts(mainB)];
  for (let at = 0; at < 3; at++) if ((x[at] ?? 0) !== (y[at] ?? 0)) return (x[at] ?? 0) - (y[at] ?? 0);
  if (preA === preB) return 0;
  return preA === undefined ? 1 : preB === undefined ? -1 : preA < preB ? -1 : 1;
}

/** The published versions `spec` (a name, or `name@range`) matches, oldest first (npm lists them as published). */
function versionsOf(spec: string): string[] {
  const found = view(spec, "version");
  const listed = Array.isArray(found) ? found.map(String) : found === undefined ? [] : [String(found)];
  return listed.sort(byVersion);
}

// Until nothing moves (a peer held back can itself take other peers at fewer versions), a pass per peer at most.
// (The newest @trpc/server, which users without the TanStack integration get, is the peer-range test's newest end.)
const versions: Record<string, string> = Object.fromEntries(PEERS.map((name) => [name, versionsOf(name).at(-1)]));
for (let moved = true, pass = 0; moved && pass < PEERS.length; pass++) {
  moved = false;
  for (const name of PEERS) {
    const wants = (view(`${name}@${versions[name]}`, "peerDependencies") ?? {}) as Record<string, string>;
    for (const [peer, range] of Object.entries(wants)) {
      const allowed = peer in versions ? versionsOf(`${peer}@${range}`) : [];
      const newest = allowed.at(-1);
      if (newest && !allowed.includes(String(versions[peer]))) {
        versions[peer] = newest;
        moved = true;
      }
    }
  }
}
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
