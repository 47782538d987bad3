/**
 * The commands of a page's ```sh blocks as a shell reads them: a line ending in a backslash joined to the next,
 * comments dropped, blank lines left out. The tests that check or run the README's commands read them so, so that a
 * command wrapped over two lines is one command there as it is for the user who pastes it.
 */
export function shellLines(markdown: string): string[] {
  const lines: string[] = [];
  for (const [, block = ""] of markdown.matchAll(/```sh\n([\s\S]*?)\n```/g)) {
    for (const line of block.replace(/\\\n\s*/g, "").split("\n")) {
      const command = line.replace(/(^|\s)#.*$/, "").trim();
      if (command) lines.push(command);
    }
  }
  return lines;
}
