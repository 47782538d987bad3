/// <reference types="node" />
/**
 * What every command of idemkit's does, whichever server it reads or purges (`idemkit`, `idemkit-outbox`,
 * `idemkit-purge` and `idemkit-outbox-purge` on PostgreSQL, `idemkit-redis` on Redis, `idemkit-dynamodb` on
 * DynamoDB): read its subcommand and options, connect to the server its environment names (with a driver the app installed, loaded only once a server
 * is needed), run, and print one JSON document (`--json`) or lines for people. The exit codes, here and nowhere
 * else, so that a script reads every command alike: 0 done; 1 the server failed, said on one line as what to do
 * about it (never a stack); 2 a usage error, said on one line followed by the usage; 3 nothing found. Node.js only,
 * and no part of the engine: a package of its own, which only the packages with commands depend on.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";

/** What a command printed: the document for `--json`, lines for people, and whether it found what it was asked. */
export interface InspectReport {
  document: unknown;
  lines: string[];
  found: boolean;
}

export type CommandOptions = NonNullable<ParseArgsConfig["options"]>;

/** The options every command has, besides its own. */
const COMMON = { json: { type: "boolean" }, help: { type: "boolean", short: "h" } } as const;

/** A command's arguments: its subcommand, what follows it, and the options as parsed. */
export interface CommandArgs<TOptions extends CommandOptions> {
  /** The subcommand given; empty for a command that has none. */
  command: string;
  operands: string[];
  values: ReturnType<typeof parseArgs<{ options: TOptions & typeof COMMON; allowPositionals: true }>>["values"];
}

/** What runs a command, or one of its subcommands, once its client is connected. */
export type CommandRun<TOptions extends CommandOptions, TClient> = (
  client: TClient,
  args: CommandArgs<TOptions>,
) => Promise<InspectReport>;

export interface CommandLine<TOptions extends CommandOptions, TClient> {
  /** The command's name, as its messages begin. */
  name: string;
  /** What `--help` prints, and a usage error. */
  usage: string;
  /**
   * Its subcommands, each by name with what runs it; or, for a command without subcommands (a purge), what runs
   * it, and then an operand is a usage error.
   */
  commands: Record<string, CommandRun<TOptions, TClient>> | CommandRun<TOptions, TClient>;
  /** Its options besides `--json` and `--help`. */
  options: TOptions;
  /** The environment variable with the server's URL (`DATABASE_URL`, `REDIS_URL`). */
  urlVariable: string;
  /** Checks the arguments; returns what is wrong with them, if anything. */
  check?(args: CommandArgs<TOptions>): string | undefined;
  /** Connects to the server; a throw is the server's failure (exit 1). */
  connect(url: string, args: CommandArgs<TOptions>): Promise<{ client: TClient; close(): Promise<void> }>;
  /** A failure of the server, said as what the operator should do about it. */
  failure(error: unknown, args: CommandArgs<TOptions>): string;
}

/**
 * Runs `spec` with the process's arguments and environment. It sets the exit code and lets the process end by
 * itself, so a long `--json` document is written out whole on a piped stdout first.
 */
export async function runCommandLine<TOptions extends CommandOptions, TClient>(
  spec: CommandLine<TOptions, TClient>,
): Promise<void> {
  const usageError = (message: string): never => {
    console.error(`${spec.name}: ${oneLine(message)}`);
    console.error(spec.usage);
    process.exit(2);
  };
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ allowPositionals: true, options: { ...spec.options, ...COMMON } });
  } catch (error) {
    // Node's own message goes on to explain `--` for positionals that start with a dash: its first sentence is
    // what the operator got wrong.
    return usageError((error as Error).message.split(". ")[0] ?? String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(spec.usage);
    process.exit(0);
  }
  const chosen = chosenCommand(spec.commands, positionals);
  if (typeof chosen === "string") return usageError(chosen);
  const args = { command: chosen.command, operands: chosen.operands, values } as CommandArgs<TOptions>;
  const wrong = spec.check?.(args);
  if (wrong) return usageError(wrong);
  const url = process.env[spec.urlVariable];
  if (!url) return usageError(`${spec.urlVariable} is not set`);

  let exitCode = 0;
  let connection: Awaited<ReturnType<typeof spec.connect>> | undefined;
  try {
    connection = await spec.connect(url, args);
    const report = await chosen.run(connection.client, args);
    console.log(values.json ? JSON.stringify(report.document, null, 2) : report.lines.join("\n"));
    if (!report.found) exitCode = 3;
  } catch (error) {
    console.error(`${spec.name}: ${oneLine(spec.failure(error, args))}`);
    exitCode = 1;
  } finally {
    await connection?.close().catch(() => {});
  }
  process.exitCode = exitCode;
}

/** The subcommand `positionals` name, with what runs it and the operands after it; or what is wrong with them. */
function chosenCommand<TRun>(
  commands: Record<string, TRun> | TRun,
  positionals: string[],
): { command: string; operands: string[]; run: TRun } | string {
  if (typeof commands === "function") {
    return positionals.length === 0
      ? { command: "", operands: [], run: commands }
      : `unexpected argument "${positionals[0]}"`;
  }
  const byName = commands as Record<string, TRun>;
  const [command, ...operands] = positionals;
  if (!command) return `a command is needed: ${Object.keys(byName).join(", ")}`;
  const run = Object.hasOwn(byName, command) ? byName[command] : undefined;
  return run ? { command, operands, run } : `unknown command "${command}"`;
}

/** A message on one line, whatever a driver put in it: a script reads one line per failure. */
function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, " ");
}

/** What is wrong with a count option (`--limit`, `--batch-size`): undefined when it is a whole number, 1 or more. */
export function wrongCount(option: string, value: unknown): string | undefined {
  const count = Number(value);
  return Number.isInteger(count) && count >= 1 ? undefined : `--${option} must be a whole number, 1 or more`;
}

/** Said when the driver a command connects with is not installed: a usage error, the fix named, on one line. */
export function missingDriver(name: string, driver: string, cause: unknown): never {
  console.error(
    oneLine(`${name} connects with ${driver}, which is not installed here: run \`npm install ${driver}\` (${cause})`),
  );
  process.exit(2);
}
