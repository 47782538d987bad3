/**
 * How every idemkit command says what went wrong, as its tests check it: one line a script can read, never a stack.
 * A usage error exits 2, that line followed by the usage; a server it cannot reach exits 1, that line alone.
 */
import { expect } from "vitest";

/** What a command run as a process left behind. */
export interface CommandOutcome {
  code: number;
  stderr: string;
}

/** A usage error: exit 2, `firstLine` (a string, or a matcher) then the usage on stderr, and no stack. */
export function expectUsageError(outcome: CommandOutcome, firstLine: unknown): void {
  expect(outcome.code).toBe(2);
  expect(outcome.stderr.split("\n").slice(0, 2)).toEqual([firstLine, expect.stringMatching(/^usage: /)]);
  expect(outcome.stderr).not.toContain("    at ");
}

/** A server the command cannot reach: exit 1, and stderr one line matching `line`, no stack. */
export function expectUnreachable(outcome: CommandOutcome, line: RegExp): void {
  expect(outcome.code).toBe(1);
  expect(outcome.stderr).not.toContain("    at ");
  expect(outcome.stderr.trim().split("\n")).toEqual([expect.stringMatching(line)]);
}
