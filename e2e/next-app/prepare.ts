/**
 * A Next.js app as a new user starts it today and protects its checkout: the scaffold of create-next-app 16.4.3 with
 * its defaults (App Router, TypeScript, Tailwind, Turbopack, `cacheComponents` on), the README's three quickstarts
 * applied to it (`adoption.patch`, whose files the README shows: the table, the database, drizzle-kit's config; the
 * Server Action, its form, page and receipt; a route handler; a tRPC router, its route, its providers and a page
 * whose button uses the hook), the README's `npm install` lines run as written, with idemkit's packages from their
 * tarballs (so the app gets what the registry serves today, its peer checks on), its tables made with
 * `drizzle-kit push` as the quickstart says, and a production build. The one change that is not the quickstart's,
 * `offline-font.patch`, takes out the layout's Google fonts, which the build would download: nothing but the npm
 * registry is reached.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { shellLines } from "@idemkit/testkit";
import { installedVersions, packed, run } from "../scaffold.js";

const here = dirname(fileURLToPath(import.meta.url));
const CREATE_NEXT_APP = "create-next-app@16.4.3";
/** The packages the README's quickstarts install, and command-line, which stands in for its published version. */
const PACKAGES = ["core", "command-line", "drizzle", "next", "react", "trpc"] as const;
/** What the app was installed at, reported so a run says which versions it tested. */
const REPORTED = ["next", "react", "drizzle-orm", "postgres", "@trpc/server", "@tanstack/react-query"];
const README = join(here, "..", "..", "README.md");

export interface NextApp {
  /** The app's folder, built: `next start` serves it. */
  dir: string;
  /** The installed versions of the packages that matter here, by name. */
  versions: Record<string, string>;
  remove(): Promise<void>;
}

/** Scaffolds, adopts, installs, makes the tables of and builds the app, on the database at `databaseUrl`. */
export async function prepareNextApp(databaseUrl: string): Promise<NextApp> {
  const temp = await mkdtemp(join(tmpdir(), "idemkit-e2e-next-"));
  const dir = join(temp, "myapp");
  try {
    await run("npx", ["--yes", CREATE_NEXT_APP, "myapp", "--yes", "--skip-install", "--disable-git"], temp);
    await run("git", ["apply", join(here, "adoption.patch"), join(here, "offline-font.patch")], dir);
    await turnOnOfflineResend(join(dir, "next.config.ts"));

    // The README's install lines, as one install with idemkit's packages from their tarballs (until they are on the
    // registry, a tarball's dependency on another is only met when both are installed together).
    const tarballs = await packed(PACKAGES, temp);
    const installs = await quickstartInstalls();
    const [plain, flagged] = [
      installs.filter((args) => !args[0]?.startsWith("-")),
      installs.filter((args) => args[0]?.startsWith("-")),
    ];
    const named = plain.flat().filter((arg) => !arg.startsWith("@idemkit/"));
    await run("npm", ["install", "--no-audit", "--no-fund", ...tarballs, ...new Set(named)], dir);
    for (const args of flagged) await run("npm", ["install", "--no-audit", "--no-fund", ...args], dir);
    // The tables, as the quickstart makes them: drizzle-kit from the app's own schema, idemkit's among them.
    await run("npx", ["drizzle-kit", "push"], dir, { DATABASE_URL: databaseUrl });
    await writeFile(join(dir, ".env.production.local"), `DATABASE_URL="${databaseUrl}"\n`);
    await run("npm", ["run", "build"], dir);

    const versions = await installedVersions(dir, REPORTED);
    return { dir, versions, remove: () => rm(temp, { recursive: true, force: true }) };
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    throw error;
  }
}

/**
 * The arguments of each `npm install` line of the README's quickstarts (the shell blocks under a "Quickstart"
 * heading), in order; the one that installs from a checkout's tarballs is left out, as the packages are packed here.
 */
async function quickstartInstalls(): Promise<string[][]> {
  const readme = await readFile(README, "utf8");
  const quickstarts = readme.split(/^## /m).filter((section) => section.startsWith("Quickstart"));
  const installs = quickstarts.flatMap(shellLines);
  const lines = installs.filter((line) => line.startsWith("npm install ") && !line.includes(".tgz"));
  if (lines.length === 0) throw new Error(`${README} has no npm install line under a Quickstart heading`);
  return lines.map((line) => line.split(/\s+/).slice(2));
}

/**
 * Next.js's `experimental.useOffline`, which its docs say may become the default: a Server Action whose request
 * failed as the connection dropped is sent again, by Next.js, once it is back.
 */
async function turnOnOfflineResend(configFile: string): Promise<void> {
  const config = await readFile(configFile, "utf8");
  const opening = "const nextConfig: NextConfig = {";
  if (!config.includes(opening)) throw new Error(`${configFile} has no "${opening}" to add useOffline to:\n${config}`);
  await writeFile(configFile, config.replace(opening, `${opening}\n  experimental: { useOffline: true },`));
}
