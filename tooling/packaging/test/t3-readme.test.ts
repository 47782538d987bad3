/**
 * The T3 guide's diffs (docs/t3.md) are the patches `npm run e2e` applies to a create-t3-app scaffold and tests in
 * Chromium (e2e/t3/adoption.patch for its tRPC mutation, e2e/t3/server-action.patch for a Server Action form): file
 * by file, the lines each adds and removes are its patch's, in the same order, so a user who follows the guide
 * literally gets the app that was tested.
 */
import { readFile } from "node:fs/promises";
import { expect, it } from "vitest";

const ROOT = new URL("../../../", import.meta.url);

/** The lines a diff adds and removes, by file, without blank additions (spacing the patch adds around them). */
type Changes = Record<string, string[]>;

/**
 * Collects the changed lines of `lines`, each under the file named by the last line `fileOf` recognised as a
 * header (`undefined` for every other line).
 */
function changesOf(lines: string[], fileOf: (line: string) => string | undefined): Changes {
  const changes: Changes = {};
  let file = "";
  for (const line of lines) {
    const header = fileOf(line);
    if (header !== undefined) {
      file = header;
      continue;
    }
    if (!/^[+-]/.test(line) || line.slice(1).trim() === "") continue;
    changes[file] = [...(changes[file] ?? []), line];
  }
  return changes;
}

/** The changes of each diff block of the guide, in the order they appear. */
function guideChanges(guide: string): Changes[] {
  const blocks = [...guide.matchAll(/^```diff\n([\s\S]*?)\n```$/gm)].map((match) => String(match[1]));
  return blocks.map((block) => changesOf(block.split("\n"), (line) => /^ \/\/ ([\w./[\]-]+)(?::|$)/.exec(line)?.[1]));
}

function patchChanges(patch: string): Changes {
  return changesOf(patch.split("\n"), (line) => {
    if (line.startsWith("--- ")) return "";
    return /^\+\+\+ b\/(.+)$/.exec(line)?.[1];
  });
}

/** The patches the browser tests apply, in the order the guide shows their diffs, and how many files each changes. */
const PATCHES = [
  ["e2e/t3/adoption.patch", 7],
  ["e2e/t3/server-action.patch", 3],
] as const;

it("each of the T3 guide's diffs adds and removes exactly the lines of the patch the browser tests run", async () => {
  const guide = await readFile(new URL("docs/t3.md", ROOT), "utf8");
  const documented = guideChanges(guide);
  expect(documented).toHaveLength(PATCHES.length);
  for (const [index, [path, files]] of PATCHES.entries()) {
    const patch = await readFile(new URL(path, ROOT), "utf8");
    expect(Object.keys(documented[index] ?? {}), path).toHaveLength(files);
    expect(documented[index], path).toEqual(patchChanges(patch));
  }
});
