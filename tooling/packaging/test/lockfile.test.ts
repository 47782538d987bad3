/**
 * The lockfile installs with the npm that Node 20 ships (10.8.2) as with npm 11: `npm ci` refuses a lockfile that
 * its own resolution disagrees with (npm 10 once wanted an esbuild for vite's optional peer that npm 11 leaves
 * out), and a fresh machine's first command is `npm ci` with whichever npm it has.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";

const execute = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

let temp: string;
beforeAll(async () => {
  // The manifests are all `npm ci` checks the lockfile against.
  temp = await mkdtemp(join(tmpdir(), "idemkit-lockfile-"));
  const { workspaces } = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { workspaces: string[] };
  const folders = [""];
  for (const pattern of workspaces) {
    if (!pattern.endsWith("/*")) folders.push(pattern);
    else {
      const parent = pattern.slice(0, -2);
      for (const entry of await readdir(join(ROOT, parent), { withFileTypes: true })) {
        if (entry.isDirectory()) folders.push(join(parent, entry.name));
      }
    }
  }
  for (const folder of folders) {
    const manifest = join(ROOT, folder, "package.json");
    if (!existsSync(manifest)) continue;
    await mkdir(join(temp, folder), { recursive: true });
    await copyFile(manifest, join(temp, folder, "package.json"));
  }
  await copyFile(join(ROOT, "package-lock.json"), join(temp, "package-lock.json"));
});
afterAll(async () => {
  await rm(temp, { recursive: true, force: true });
});

it.each([
  ["npm 10.8.2, Node 20's own", ["--yes", "npm@10.8.2", "ci"]],
  ["npm 11", ["--yes", "npm@11", "ci"]],
])(
  "installs with %s: npm ci accepts the lockfile as it is",
  async (_, args) => {
    const result = await execute("npx", [...args, "--dry-run", "--ignore-scripts", "--no-audit", "--no-fund"], {
      cwd: temp,
      timeout: 120_000,
    }).catch((error: { stdout?: string; stderr?: string }) => ({
      stdout: error.stdout ?? "",
      stderr: error.stderr ?? "",
    }));
    expect(`${result.stdout}\n${result.stderr}`).not.toMatch(/EUSAGE|Missing: /);
    expect(result.stdout).toMatch(/added \d+ packages/);
  },
  180_000,
);
