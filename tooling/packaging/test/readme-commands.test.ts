/**
 * The shell blocks of the README and the guides name things that exist: every `npm start`, `npm test` and `npm run <script>` (with its
 * `-w <workspace>`) is a script there, every tarball path is the name `npm run pack:packages` writes for today's
 * version, and every `npx <command>` is a published package's command that takes the flags shown. The blocks that
 * do something are run elsewhere: Install and pg-boss's by registry.test.ts, the curl example by
 * apps/web/test/edge.test.ts, the T3 diff by the browser tests.
 */
import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { shellLines } from "@idemkit/testkit";
import { beforeAll, expect, it } from "vitest";
import { readPages } from "./pages.js";

const execute = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  scripts?: Record<string, string>;
  bin?: Record<string, string>;
}

let lines: string[];
const workspaces = new Map<string, Manifest>();
let root: Manifest;

beforeAll(async () => {
  lines = readPages().flatMap(({ text }) => shellLines(text));
  root = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8"));
  for (const parent of ["packages", "apps", "tooling"]) {
    for (const entry of await readdir(join(ROOT, parent), { withFileTypes: true })) {
      const path = join(ROOT, parent, entry.name, "package.json");
      const manifest = await readFile(path, "utf8").then(JSON.parse, () => undefined);
      if (entry.isDirectory() && manifest) workspaces.set(manifest.name, manifest as Manifest);
    }
  }
});

it("names only npm scripts that exist, at the root or in the workspace it names", () => {
  const named = lines.flatMap((line) => {
    const match = /^npm (start|test|run (\S+))(?: -w (\S+))?/.exec(line);
    if (!match) return [];
    return [{ line, script: match[2] ?? match[1] ?? "", workspace: match[3] }];
  });
  expect(named.length).toBeGreaterThan(10);
  for (const { line, script, workspace } of named) {
    const manifest = workspace ? workspaces.get(workspace) : root;
    expect(manifest?.scripts?.[script], line).toBeDefined();
  }
});

it("names the tarballs npm run pack:packages writes, at today's versions", () => {
  const tarballs = lines.flatMap((line) => [...line.matchAll(/packed\/idemkit-([a-z-]+?)-(\d+\.\d+\.\d+)\.tgz/g)]);
  expect(tarballs.length).toBeGreaterThan(0);
  for (const [path, name, version] of tarballs) {
    const manifest = workspaces.get(`@idemkit/${name}`);
    expect(manifest && !manifest.private, path).toBe(true);
    expect(version, path).toBe(manifest?.version);
    expect(root.scripts?.["pack:packages"], path).toContain(`-w @idemkit/${name}`);
  }
});

it("runs only published commands with flags they take", async () => {
  const invoked = lines.flatMap((line) => {
    const match = /npx (\S+)((?: \S+)*)/.exec(line);
    return match?.[1] ? [{ line, command: match[1], flags: (match[2] ?? "").match(/--[a-z-]+/g) ?? [] }] : [];
  });
  expect(invoked.length).toBeGreaterThan(0);
  for (const { line, command, flags } of invoked) {
    const owner = [...workspaces.values()].find((manifest) => !manifest.private && manifest.bin?.[command]);
    expect(owner, line).toBeDefined();
    const bin = join(ROOT, "packages", String(owner?.name.replace("@idemkit/", "")), String(owner?.bin?.[command]));
    const { stdout, stderr } = await execute(process.execPath, [bin, "--help"]);
    for (const flag of flags) expect(`${stdout}${stderr}`, line).toContain(flag);
  }
});
