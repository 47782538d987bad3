/**
 * Every ```ts and ```tsx block of the README and the guides under docs/ is an excerpt of a file that is type-checked
 * or run: the line before the block names it, `<!-- snippet: examples/server/trpc.ts#trpc -->`, and the block is that
 * file's region between `// #region trpc` and `// #endregion trpc`, as it is there. Most are in examples/, one
 * checkout app whose files fit together (`npm run typecheck` checks them). The README's quickstart is the files
 * e2e/next-app/adoption.patch adds to a fresh create-next-app (`<!-- snippet: <patch>#<file> -->`), which the
 * browser tests build and press. The "Test your own form" example is e2e/tests/readme-example.spec.ts, which
 * `npm run e2e` runs, and the server test's is a test of apps/web/test. So a block a user pastes compiles, and fits
 * the others.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readPages } from "./pages.js";

const ROOT = new URL("../../../", import.meta.url);

/** A line that opens or closes a region: `// #region name`, `// #endregion name`. */
const REGION_MARKER = /^\s*\/\/ #(region|endregion) (\S+)\s*$/;
const SNIPPET_MARKER = /^<!-- snippet: (\S+)#(\S+) -->$/;
const FENCE = /^```(\S*)/;

/** A fenced block of the README, by its language, with the line just before its opening fence. */
interface Block {
  /** The 1-based line of its opening fence. */
  line: number;
  lang: string;
  before: string;
  code: string;
}

function blocksOf(markdown: string, page = "README.md"): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  for (let index = 0; index < lines.length; index++) {
    const lang = FENCE.exec(lines[index] ?? "")?.[1];
    if (lang === undefined) continue;
    const end = lines.findIndex((line, at) => at > index && line.startsWith("```"));
    if (end === -1) throw new Error(`${page}:${index + 1}: a code block that never closes`);
    blocks.push({
      line: index + 1,
      lang,
      before: lines[index - 1] ?? "",
      code: lines.slice(index + 1, end).join("\n"),
    });
    index = end;
  }
  return blocks;
}

/**
 * The lines between `// #region name` and `// #endregion name` in `source`, without the markers of regions nested
 * in it, their common indentation removed and trailing whitespace dropped; undefined when `source` has no such region.
 */
function regionOf(source: string, name: string): string | undefined {
  const lines = source.split("\n");
  const markerAt = (kind: string) =>
    lines.findIndex((line) => REGION_MARKER.exec(line)?.slice(1, 3).join(" ") === `${kind} ${name}`);
  const start = markerAt("region");
  const end = markerAt("endregion");
  if (start === -1 || end < start) return undefined;
  const body = lines.slice(start + 1, end).filter((line) => !REGION_MARKER.test(line));
  const indent = Math.min(...body.filter((line) => line.trim()).map((line) => line.length - line.trimStart().length));
  return trimmed(body.map((line) => line.slice(indent)).join("\n"));
}

/**
 * A file a patch adds (`+++ b/<name>`), as the patch adds it: a quickstart's file is the fresh app's, which the
 * browser tests build and run (e2e/next-app/adoption.patch). Undefined when the patch adds no such file.
 */
function addedFile(patch: string, name: string): string | undefined {
  const lines = patch.split("\n");
  const start = lines.indexOf(`+++ b/${name}`);
  if (start === -1) return undefined;
  const end = lines.findIndex((line, at) => at > start && line.startsWith("diff --git "));
  const hunk = lines.slice(start + 1, end === -1 ? undefined : end).filter((line) => !line.startsWith("@@"));
  return trimmed(hunk.map((line) => line.slice(1)).join("\n")).replace(/\n+$/, "");
}

const trimmed = (text: string) =>
  text
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n");

/**
 * What is wrong with the ```ts / ```tsx blocks of `markdown`, one message each: a block without a snippet marker
 * before it, a marker naming a file or a region that does not exist, a block that differs from its region. Other
 * blocks (sh, diff) are left to the tests that run them.
 */
function snippetProblems(markdown: string, read: (path: string) => string | undefined, page = "README.md"): string[] {
  const problems: string[] = [];
  for (const block of blocksOf(markdown, page)) {
    if (block.lang !== "ts" && block.lang !== "tsx") continue;
    const where = `${page}:${block.line}`;
    const marker = SNIPPET_MARKER.exec(block.before);
    if (!marker) {
      problems.push(`${where}: no <!-- snippet: <file>#<region> --> on the line before this ${block.lang} block`);
      continue;
    }
    const [, path = "", name = ""] = marker;
    const source = read(path);
    if (source === undefined) {
      problems.push(`${where}: ${path} does not exist`);
      continue;
    }
    const region = path.endsWith(".patch") ? addedFile(source, name) : regionOf(source, name);
    if (region === undefined) problems.push(`${where}: ${path} has no region ${name}`);
    else if (trimmed(block.code) !== region)
      problems.push(`${where}: differs from ${path}#${name}, ${firstDifference(block.code, region)}`);
  }
  return problems;
}

/** Where two texts part, for a failure message: the first line that differs, as each has it. */
function firstDifference(readme: string, region: string): string {
  const ours = trimmed(readme).split("\n");
  const theirs = region.split("\n");
  const line = ours.findIndex((text, index) => text !== theirs[index]);
  const at = line === -1 ? ours.length : line;
  return `at its line ${at + 1}:\n  README: ${ours[at] ?? "(nothing)"}\n  region: ${theirs[at] ?? "(nothing)"}`;
}

function readFromRoot(path: string): string | undefined {
  try {
    return readFileSync(new URL(path, ROOT), "utf8");
  } catch {
    return undefined;
  }
}

it("every ts and tsx block of the README and the guides is a region of a file that is type-checked or run, as it is there", () => {
  const pages = readPages();
  const blocks = pages.flatMap(({ text, page }) =>
    blocksOf(text, page).filter((block) => block.lang === "ts" || block.lang === "tsx"),
  );
  expect(blocks.length).toBeGreaterThanOrEqual(15);
  expect(pages.flatMap(({ text, page }) => snippetProblems(text, readFromRoot, page))).toEqual([]);
});

describe("the check", () => {
  const files: Record<string, string> = {
    "app.ts": [
      "import { a } from 'a';",
      "export const router = {",
      "  // #region place",
      "  place: () => {",
      "    // #region inner",
      "    return a;   ",
      "    // #endregion inner",
      "  },",
      "  // #endregion place",
      "};",
    ].join("\n"),
  };
  const problems = (markdown: string) => snippetProblems(markdown, (path) => files[path]);
  const block = (marker: string, code: string, lang = "ts") => `Intro.\n${marker}\n\`\`\`${lang}\n${code}\n\`\`\`\n`;

  it("takes a region dedented, without nested markers or trailing whitespace, and leaves other languages alone", () => {
    expect(problems(block("<!-- snippet: app.ts#place -->", "place: () => {\n  return a;\n},"))).toEqual([]);
    expect(problems(block("<!-- snippet: app.ts#inner -->", "return a;", "tsx"))).toEqual([]);
    expect(problems(block("", "npm test", "sh") + block("", "+export {};", "diff"))).toEqual([]);
  });

  it("fails a block without a marker, with a missing file or region, or that differs from its region", () => {
    expect(problems(block("", "const x = 1;"))).toEqual([
      "README.md:3: no <!-- snippet: <file>#<region> --> on the line before this ts block",
    ]);
    expect(problems(block("<!-- snippet: gone.ts#place -->", "place"))).toEqual([
      "README.md:3: gone.ts does not exist",
    ]);
    expect(problems(block("<!-- snippet: app.ts#gone -->", "place"))).toEqual([
      "README.md:3: app.ts has no region gone",
    ]);
    expect(problems(block("<!-- snippet: app.ts#inner -->", "return b;", "tsx"))).toEqual([
      "README.md:3: differs from app.ts#inner, at its line 1:\n  README: return b;\n  region: return a;",
    ]);
  });
});
