/** The exit codes and output every idemkit command shares, run as a process as a script runs it. */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expectUnreachable, expectUsageError } from "@idemkit/testkit";
import { describe, expect, it } from "vitest";

const COMMAND = fileURLToPath(new URL("./greeting-command.ts", import.meta.url));

async function greeting(args: string[], url: string | null = "world") {
  const env: NodeJS.ProcessEnv = { ...process.env, GREETING_URL: url ?? undefined };
  if (url === null) delete env.GREETING_URL;
  return promisify(execFile)(process.execPath, ["--import", "tsx", COMMAND, ...args], { env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}

describe("a command on the shared runner", () => {
  it("exits 0 with lines for people, or one JSON document with --json", async () => {
    expect(await greeting(["hello", "--times", "2"])).toMatchObject({ code: 0, stdout: "hello worldhello world\n" });
    const json = await greeting(["hello", "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ greeting: "hello world" });
  });

  it("exits 3 when it found nothing, having printed what it did find", async () => {
    expect(await greeting(["nobody"])).toMatchObject({ code: 3, stdout: "nobody there\n" });
  });

  it("exits 2 on a usage error, with one line then the usage, and never connects", async () => {
    expectUsageError(await greeting([], "down"), "greeting: a command is needed: hello, nobody");
    expectUsageError(await greeting(["goodbye"]), 'greeting: unknown command "goodbye"');
    expectUsageError(await greeting(["hello", "--times", "0"]), "greeting: --times must be a whole number, 1 or more");
    expectUsageError(
      await greeting(["hello", "--colour"]),
      expect.stringMatching(/^greeting: Unknown option '--colour'/),
    );
    expectUsageError(await greeting(["hello"], null), "greeting: GREETING_URL is not set");
  });

  it("exits 1 when the server fails, on one line saying what to do, without the driver's stack", async () => {
    expectUnreachable(
      await greeting(["hello"], "down"),
      /^greeting: the greeting server did not answer \(connection refused at somewhere/,
    );
  });

  it("prints the usage and exits 0 for --help", async () => {
    expect(await greeting(["--help"])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^usage: greeting/) });
  });
});
