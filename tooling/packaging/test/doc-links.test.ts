/**
 * Every relative link of the README, the guides under docs/ and the packages' READMEs leads somewhere: the file
 * exists, and an anchor names a heading of the page it points at, as GitHub makes heading anchors. A guide moved or a
 * heading renamed fails here, not in a reader's browser.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { expect, it } from "vitest";
import { documentationPages, ROOT } from "./pages.js";

/** The pages checked: the README, every guide, every package's README. */
function pages(): string[] {
  const packages = readdirSync(join(ROOT, "packages"))
    .map((name) => join("packages", name, "README.md"))
    .filter((path) => existsSync(join(ROOT, path)));
  return [...documentationPages(), ...packages];
}

/** The lines of `markdown` outside fenced code blocks. */
function prose(markdown: string): string[] {
  let fenced = false;
  return markdown.split("\n").filter((line) => {
    if (line.startsWith("```")) fenced = !fenced;
    return !fenced && !line.startsWith("```");
  });
}

/** The anchors GitHub gives the headings of `markdown`: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of prose(markdown)) {
    const heading = /^#{1,6} (.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** What is wrong with the relative links of the page at `page`, one message each. */
function brokenLinks(page: string): string[] {
  const problems: string[] = [];
  const text = readFileSync(join(ROOT, page), "utf8");
  for (const line of prose(text)) {
    for (const [, target = ""] of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      const [path = "", anchor] = target.split("#");
      const file = path === "" ? join(ROOT, page) : join(ROOT, dirname(page), path);
      if (!existsSync(file)) {
        problems.push(`${page}: ${target}: no such file`);
        continue;
      }
      if (anchor === undefined) continue;
      if (statSync(file).isDirectory() || !file.endsWith(".md")) {
        problems.push(`${page}: ${target}: an anchor into something that is not a page`);
      } else if (!anchorsOf(readFileSync(file, "utf8")).has(anchor)) {
        problems.push(`${page}: ${target}: ${relative(ROOT, file)} has no heading #${anchor}`);
      }
    }
  }
  return problems;
}

it("every relative link of the README, the guides and the packages' READMEs leads to a file, and a heading there", () => {
  const checked = pages();
  expect(checked.length).toBeGreaterThan(20);
  expect(checked.flatMap(brokenLinks)).toEqual([]);
});

it("reads anchors as GitHub makes them", () => {
  expect(anchorsOf("# Effects after the response: outbox, relay\n## `npm test`\n## Tabs\n## Tabs\n")).toEqual(
    new Set(["effects-after-the-response-outbox-relay", "npm-test", "tabs", "tabs-1"]),
  );
});
