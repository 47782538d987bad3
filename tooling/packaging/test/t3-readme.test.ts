/**
 * The T3 guide's diff (docs/t3.md) is the patch `npm run e2e` applies to a create-t3-app scaffold and tests in Chromium
 * (e2e/t3/adoption.patch): file by file, the lines it adds and removes are the patch's, in the same order, so a
 * user who follows the README literally gets the app that was tested.
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

function readmeChanges(readme: string): Changes {
  const section = readme;
  const block = section.slice(section.indexOf("```diff\n") + "```diff\n".length, section.indexOf("\n```\n"));
  return changesOf(block.split("\n"), (line) => /^ \/\/ ([\w./[\]-]+)(?::|$)/.exec(line)?.[1]);
}

function patchChanges(patch: string): Changes {
  return changesOf(patch.split("\n"), (line) => {
    if (line.startsWith("--- ")) return "";
    return /^\+\+\+ b\/(.+)$/.exec(line)?.[1];
  });
}

it("the T3 guide's diff adds and removes exactly the lines of the patch the browser tests run", async () => {
  const readme = await readFile(new URL("docs/t3.md", ROOT), "utf8");
  const patch = await readFile(new URL("e2e/t3/adoption.patch", ROOT), "utf8");
  const documented = readmeChanges(readme);
  expect(Object.keys(documented).length).toBeGreaterThanOrEqual(7);
  expect(documented).toEqual(patchChanges(patch));
});
