/**
 * What making an app as a new user does, shared by the T3 app (t3/prepare.ts) and the new Next.js app
 * (next-app/prepare.ts): commands run in its folder, the packages packed as the registry would serve them, and the
 * versions a plain install gave it.
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const execute = promisify(execFile);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Runs a command in `cwd`, with `env` beside the process's own; a failure carries everything it printed. */
export async function run(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<string> {
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

/** The workspace's packages `names` (`core`, `next`), packed into `folder`: the tarballs' paths. */
export async function packed(names: readonly string[], folder: string): Promise<string[]> {
  const tarballs: string[] = [];
  for (const name of names) {
    const output = await run("npm", ["pack", "--json", "--pack-destination", folder], join(ROOT, "packages", name));
    const [{ filename }] = JSON.parse(output) as [{ filename: string }];
    tarballs.push(join(folder, filename));
  }
  return tarballs;
}

/** The versions of `names` installed in the app at `dir`, by name: what a run tested. */
export async function installedVersions(dir: string, names: readonly string[]): Promise<Record<string, string>> {
  const versions: Record<string, string> = {};
  for (const name of names) {
    const manifest = JSON.parse(await readFile(join(dir, "node_modules", name, "package.json"), "utf8"));
    versions[name] = String(manifest.version);
  }
  return versions;
}
