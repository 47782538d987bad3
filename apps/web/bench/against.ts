/**
 * `npm run bench:against -- <git ref>`: `npm run bench` with this checkout and `<ref>` side by side, in one run (see
 * BENCH_AGAINST in bench.ts). The ref is exported to a folder of its own under the system's temporary directory,
 * given this checkout's node_modules (hard links, when both lockfiles are the same; else `npm ci` there) and built;
 * a second run against the same commit reuses it, and the folder stays until removed (its path is printed). The
 * hard links share their files with this checkout's node_modules: nothing here writes into them, but a tool that
 * edits a dependency in place (patch-package) would change both. BENCH_ONLY and the other variables pass through
 * to bench.ts; the other server's BENCH_SERVER_ARGS paths are relative to that folder's apps/web.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const BENCH = fileURLToPath(new URL("./bench.ts", import.meta.url));
const ref = process.argv[2];
if (!ref) {
  console.error('usage: npm run bench:against -- <git ref>   (BENCH_ONLY="<scenario>;..." to run only those)');
  process.exit(2);
}

const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();
const sha = git("rev-parse", "--verify", `${ref}^{commit}`);
const checkout = join(tmpdir(), `idemkit-against-${sha.slice(0, 12)}`);
const built = join(checkout, ".idemkit-bench-built");

function run(command: string, args: string[], cwd: string): void {
  console.log(`> ${[command, ...args].join(" ")}   (in ${cwd})`);
  execFileSync(command, args, { cwd, stdio: "inherit" });
}

if (!existsSync(built)) {
  mkdirSync(checkout, { recursive: true });
  run("sh", ["-c", `git archive --format=tar ${sha} | tar -x -C '${checkout}'`], ROOT);
  const lockfile = (folder: string) => readFileSync(join(folder, "package-lock.json"), "utf8");
  if (!existsSync(join(checkout, "node_modules"))) {
    // Hard links cost no space and a second; node_modules' links to the workspaces are relative, so they point
    // into the exported checkout.
    if (lockfile(checkout) === lockfile(ROOT)) run("cp", ["-al", join(ROOT, "node_modules"), checkout], ROOT);
    else run("npm", ["ci", "--no-audit", "--no-fund"], checkout);
  }
  run("npx", ["turbo", "run", "build", "--filter=@idemkit/web^..."], checkout);
  writeFileSync(built, `${sha}\n`);
}

console.log(`${ref} (${sha.slice(0, 12)}) is built in ${checkout}; rm -rf it when done.`);
const bench = spawnSync(process.execPath, ["--import", "tsx", BENCH], {
  stdio: "inherit",
  env: { ...process.env, BENCH_AGAINST: checkout, BENCH_AGAINST_REF: `${ref} (${sha.slice(0, 12)})` },
});
process.exit(bench.status ?? 1);
