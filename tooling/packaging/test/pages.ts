/** The pages a user reads, which the README's tests hold to what the repository does: the README and the guides. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** The README and every guide under docs/, as paths from the repository's root. */
export function documentationPages(): string[] {
  const guides = readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return ["README.md", ...guides];
}

/** Each page with its text. */
export function readPages(): { page: string; text: string }[] {
  return documentationPages().map((page) => ({ page, text: readFileSync(join(ROOT, page), "utf8") }));
}
