/**
 * A create-t3-app as a new user makes it and adopts idemkit: the scaffold of create-t3-app 7.40.0 (App Router,
 * tRPC with `@trpc/react-query`, Drizzle on postgres.js, NextAuth), the T3 guide's two diffs applied to it
 * (`adoption.patch` for its tRPC mutation, `server-action.patch` for a Server Action form of its own), the packages
 * installed from their tarballs with a plain `npm install` (T3's own dependencies resolve as T3 pins them: tRPC
 * 11.19, drizzle-orm 0.41, Next.js 15.5), its tables pushed with its own `npm run db:push`, and a production build.
 * The one change that is not the guide's, `offline-font.patch`, takes out the layout's Google font, which the build
 * would download: nothing but the npm registry is reached.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { installedVersions, packed, run } from "../scaffold.js";

const here = dirname(fileURLToPath(import.meta.url));
/** The packages the T3 guide installs, and core and command-line, which stand in for their published versions. */
const PACKAGES = ["core", "command-line", "trpc", "drizzle", "react", "next"] as const;
/** What the app was installed at, reported so a run says which versions it tested. */
const REPORTED = [
  "@trpc/server",
  "@trpc/react-query",
  "@tanstack/react-query",
  "drizzle-orm",
  "postgres",
  "next",
  "react",
];

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
    const patches = ["adoption.patch", "server-action.patch", "offline-font.patch"].map((patch) => join(here, patch));
    await run("git", ["apply", ...patches], dir);

    const tarballs = await packed(PACKAGES, temp);
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

    const versions = await installedVersions(dir, REPORTED);
    return { dir, versions, remove: () => rm(temp, { recursive: true, force: true }) };
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    throw error;
  }
}
