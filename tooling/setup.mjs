/**
 * What `npm start`, `npm test` and the other root scripts do first, so that each works on a fresh clone with
 * Node.js 20 and the npm it ships: installs the dependencies when they are missing or not the lockfile's, and with
 * `test`, finds or installs the Chromium the browser tests drive, the redis-server the Redis store's tests start,
 * and the PgBouncer the pooler tests put in front of PostgreSQL.
 * Plain Node: it runs before anything is installed.
 *
 *   node tooling/setup.mjs [test]
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const forTests = process.argv[2] === "test";
if (process.argv[2] !== undefined && !forTests) {
  console.error("usage: node tooling/setup.mjs [test]");
  process.exit(2);
}

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`idemkit needs Node.js 20.19 or later; this is ${process.version}.`);
  process.exit(1);
}

/** Runs a command where the user sees it, as they would have typed it. */
function run(command, args) {
  console.log(`> ${[command, ...args].join(" ")}`);
  execFileSync(command, args, { cwd: ROOT, stdio: "inherit" });
}

/** Runs Debian's apt-get, through sudo unless this is root, without questions. */
function aptGet(args) {
  const command = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", ...args];
  if (process.getuid?.() === 0) run(command[0], command.slice(1));
  else run("sudo", command);
}

/**
 * Whether node_modules holds what the lockfile says: each package npm installed (its record of them,
 * node_modules/.package-lock.json) at the lockfile's version, and every package the lockfile requires on every
 * platform there. Optional packages may be missing: npm leaves out those for other platforms.
 */
function installedAsLocked() {
  const installedRecord = join(ROOT, "node_modules", ".package-lock.json");
  if (!existsSync(installedRecord)) return false;
  const locked = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")).packages;
  const installed = JSON.parse(readFileSync(installedRecord, "utf8")).packages;
  for (const [path, entry] of Object.entries(locked)) {
    if (!path.includes("node_modules/") || entry.link) continue;
    const found = installed[path];
    if (found ? found.version !== entry.version : !entry.optional) return false;
  }
  return Object.entries(installed).every(([path, entry]) => entry.link || locked[path]?.version === entry.version);
}

if (!installedAsLocked()) {
  // The npm that runs this script, whichever version the machine has (npm sets npm_execpath for scripts).
  const npm = process.env.npm_execpath;
  if (npm) run(process.execPath, [npm, "ci", "--prefer-offline", "--no-audit", "--no-fund"]);
  else run("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund"]);
}

if (forTests) {
  const onPath = (name) =>
    (process.env.PATH ?? "").split(delimiter).some((folder) => folder && existsSync(join(folder, name)));
  // e2e/chromium.ts launches Debian's Chromium from either path, else Playwright's own.
  const systemChromium = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"].some((path) => existsSync(path));
  const missing = [];
  if (!systemChromium) missing.push("chromium");
  if (!process.env.REDIS_URL && !onPath("redis-server")) missing.push("redis-server");
  // Debian installs it in /usr/sbin, which is not on every user's PATH.
  if (!onPath("pgbouncer") && !existsSync("/usr/sbin/pgbouncer")) missing.push("pgbouncer");

  if (missing.length > 0 && onPath("apt-get")) {
    // Playwright cannot download its browsers on machines that reach only the npm registry and Debian's mirrors.
    aptGet(["update", "-qq"]);
    aptGet(["install", "-y", "-qq", ...missing]);
  } else {
    if (missing.includes("chromium")) run("npx", ["playwright", "install", "chromium"]);
    if (missing.includes("pgbouncer")) {
      console.error(
        "The pooler tests start a PgBouncer in front of PostgreSQL, and none is installed: install it " +
          "(brew install pgbouncer, apt-get install pgbouncer).",
      );
      process.exit(1);
    }
    if (missing.includes("redis-server")) {
      console.error(
        "The Redis store's tests start a redis-server, and none is on PATH: install Redis " +
          "(brew install redis, apt-get install redis-server), or set REDIS_URL to a server they may use.",
      );
      process.exit(1);
    }
  }
}
