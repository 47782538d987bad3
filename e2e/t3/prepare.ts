/**
 * A create-t3-app as a new user makes it and adopts idemkit: the scaffold of create-t3-app 7.40.0 (App Router,
 * tRPC with `@trpc/react-query`, Drizzle on postgres.js, NextAuth), the README's T3 diff applied to it
 * (`adoption.patch`), the packages installed from their tarballs with a plain `npm install` (T3's own dependencies
 * resolve as T3 pins them: tRPC 11.19, drizzle-orm 0.41, Next.js 15), its tables pushed with its own
 * `npm run db:push`, and a production build. The one change that is not the README's, `offline-font.patch`, takes
 * out the layout's Google font, which the build would download: nothing but the npm registry is reached.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execute = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, "..", "..");
/** The packages the README's T3 section installs, and core, which stands in for its published version. */
const PACKAGES = ["core", "trpc", "drizzle", "react"] as const;
/** What the app was installed at, reported so a run says which versions it tested. */
const REPORTED = ["@trpc/server", "@trpc/react-query", "@tanstack/react-query", "drizzle-orm", "postgres", "next"];

/** Runs a command in `cwd`; a failure carries everything it printed. */
async function run(command: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await execute(command, args, {
      cwd,
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" },
      maxBuffer: 64 * 1024 * 1024,
      timeout: 300_000,
    });
    return stdout;
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd}:\n${stdout}\n${stderr}`);
  }
}

export interface T3App {
  /** The app's folder, built: `next start` serves it. */
  dir: string;
  /** The installed versions of the packages that matter here, by name. */
  versions: Record<string, string>;
  remove(): Promise<void>;
}

/** Scaffolds, adopts, installs, migrates and builds the T3 app, on the database at `databaseUrl`. */
export async function prepareT3App(databaseUrl: string): Promise<T3App> {
  const temp = await mkdtemp(join(tmpdir(), "idemkit-e2e-t3-"));
  const dir = join(temp, "yourapp");
  try {
    await run(
      "npx",
      [
        "--yes",
        "create-t3-app@7.40.0",
        "yourapp",
        ...["--CI", "--appRouter", "--trpc", "--drizzle", "--nextAuth", "--dbProvider", "postgres"],
        ...["--noGit", "--noInstall"],
      ],
      temp,
    );
    await run("git", ["apply", join(here, "adoption.patch"), join(here, "offline-font.patch")], dir);

    const tarballs: string[] = [];
    for (const name of PACKAGES) {
      const packed = await run("npm", ["pack", "--json", "--pack-destination", temp], join(ROOT, "packages", name));
      const [{ filename }] = JSON.parse(packed) as [{ filename: string }];
      tarballs.push(join(temp, filename));
    }
    await run("npm", ["install", ...tarballs], dir);

    // What T3's .env.example asks for; Discord is never reached, the tests sign in with a session row.
    await writeFile(
      join(dir, ".env"),
      [
        `DATABASE_URL="${databaseUrl}"`,
        `AUTH_SECRET="${globalThis.crypto.randomUUID()}"`,
        'AUTH_DISCORD_ID="unused"',
        'AUTH_DISCORD_SECRET="unused"',
        // `next start` outside Vercel: Auth.js trusts the Host header only when told to.
        "AUTH_TRUST_HOST=true",
        "",
      ].join("\n"),
    );
    await run("npm", ["run", "db:push"], dir);
    await run("npm", ["run", "build"], dir);

    const versions: Record<string, string> = {};
    for (const name of REPORTED) {
      const manifest = JSON.parse(await readFile(join(dir, "node_modules", name, "package.json"), "utf8"));
      versions[name] = String(manifest.version);
    }
    return { dir, versions, remove: () => rm(temp, { recursive: true, force: true }) };
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    throw error;
  }
}
