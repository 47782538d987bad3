/**
 * A command built on the runner alone, as a store package builds its own: its "server" is the URL, read back, so
 * that what is checked is the runner's part (arguments, printing, exit codes), not a database's.
 */
import { type CommandArgs, runCommandLine, wrongCount } from "../src/index.js";

const options = { times: { type: "string", default: "1" } } as const;

await runCommandLine({
  name: "greeting",
  usage: "usage: greeting <hello|nobody> [--times N] [--json]",
  options,
  urlVariable: "GREETING_URL",
  commands: {
    async hello(url: string, args: CommandArgs<typeof options>) {
      const greeting = `hello ${url}`.repeat(Number(args.values.times));
      return { document: { greeting }, lines: [greeting], found: true };
    },
    async nobody() {
      return { document: null, lines: ["nobody there"], found: false };
    },
  },
  check: (args) => wrongCount("times", args.values.times),
  async connect(url) {
    if (url.startsWith("down")) throw new Error("connection refused\n    at somewhere (driver.js:1:1)");
    return { client: url, close: async () => {} };
  },
  failure: (error) => `the greeting server did not answer (${(error as Error).message}); is it running?`,
});
