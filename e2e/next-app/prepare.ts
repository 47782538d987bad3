/**
 * A Next.js app as a new user starts it today and protects its checkout: the scaffold of create-next-app 16.4.3 with
 * its defaults (App Router, TypeScript, Tailwind, Turbopack, `cacheComponents` on), the README's Server Action
 * section applied to it (`adoption.patch`: the action, the page with its key field, the form, a receipt), the
 * packages installed from their tarballs beside `drizzle-orm` and `postgres` with a plain `npm install` (so it gets
 * what the registry serves today, its peer checks on), its tables made, and a production build. The one change
 * that is not the README's, `offline-font.patch`, takes out the layout's Google fonts, which the build would
 * download: nothing but the npm registry is reached.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { migrationStatementsFor } from "@idemkit/testkit";
import postgres from "postgres";

const execute = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, "..", "..");
const CREATE_NEXT_APP = "create-next-app@16.4.3";
/** The packages the README's Server Action section installs, and core, which stands in for its published version. */
const PACKAGES = ["core", "drizzle", "next"] as const;
/** What the app was installed at, reported so a run says which versions it tested. */
const REPORTED = ["next", "react", "drizzle-orm", "postgres"];

/** Runs a command in `cwd`; a failure carries everything it printed. */
async function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<string> {
  try {
    const { stdout } = await execute(command, args, {
      cwd,
      env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", ...env },
      maxBuffer: 64 * 1024 * 1024,
      timeout: 300_000,
    });
    return stdout;
  } catch (error) {
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd}:\n${stdout}\n${stderr}`);
  }
}

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

    const tarballs: string[] = [];
    for (const name of PACKAGES) {
      const packed = await run("npm", ["pack", "--json", "--pack-destination", temp], join(ROOT, "packages", name));
      const [{ filename }] = JSON.parse(packed) as [{ filename: string }];
      tarballs.push(join(temp, filename));
    }
    await run("npm", ["install", "--no-audit", "--no-fund", ...tarballs, "drizzle-orm", "postgres"], dir);

    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      await sql.unsafe(
        "create table orders (id serial primary key, user_id text not null, sku text not null, qty int not null)",
      );
      for (const statement of migrationStatementsFor("idempotency_keys")) await sql.unsafe(statement);
    } finally {
      await sql.end();
    }
    await writeFile(join(dir, ".env.production.local"), `DATABASE_URL="${databaseUrl}"\n`);
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
