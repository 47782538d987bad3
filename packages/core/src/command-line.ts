/// <reference types="node" />
/**
 * What every inspecting command of idemkit's does, whichever server it reads (`idemkit` and `idemkit-outbox` on
 * PostgreSQL, `idemkit-redis` on Redis): read its subcommand and options, connect to the server its environment
 * names (with a driver the app installed, loaded only once a server is needed), run, and print one JSON document
 * (`--json`) or lines for people. Exit codes a script can use: 0 done, 1 the server failed (said as what to do
 * about it), 2 a usage error, 3 nothing found. Node.js only: a separate entry, so no bundle for the browser sees it.
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
  command: string;
  operands: string[];
  values: ReturnType<typeof parseArgs<{ options: TOptions & typeof COMMON; allowPositionals: true }>>["values"];
}

export interface CommandLine<TOptions extends CommandOptions, TClient> {
  /** The command's name, as its messages begin. */
  name: string;
  /** What `--help` prints, and a usage error. */
  usage: string;
  /** Its subcommands, each by name with what runs it. */
  commands: Record<string, (client: TClient, args: CommandArgs<TOptions>) => Promise<InspectReport>>;
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
  const usageError = (message?: string): never => {
    if (message) console.error(`${spec.name}: ${message}`);
    console.error(spec.usage);
    process.exit(2);
  };
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({ allowPositionals: true, options: { ...spec.options, ...COMMON } });
  } catch (error) {
    return usageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(spec.usage);
    process.exit(0);
  }
  const [command, ...operands] = positionals;
  const subcommand = command && Object.hasOwn(spec.commands, command) ? spec.commands[command] : undefined;
  if (!command || !subcommand) return usageError(command && `unknown command "${command}"`);
  const args = { command, operands, values } as CommandArgs<TOptions>;
  const wrong = spec.check?.(args);
  if (wrong) return usageError(wrong);
  const url = process.env[spec.urlVariable];
  if (!url) return usageError(`${spec.urlVariable} is not set`);

  let exitCode = 0;
  let connection: Awaited<ReturnType<typeof spec.connect>> | undefined;
  try {
    connection = await spec.connect(url, args);
    const report = await subcommand(connection.client, args);
    console.log(values.json ? JSON.stringify(report.document, null, 2) : report.lines.join("\n"));
    if (!report.found) exitCode = 3;
  } catch (error) {
    console.error(`${spec.name}: ${spec.failure(error, args)}`);
    exitCode = 1;
  } finally {
    await connection?.close().catch(() => {});
  }
  process.exitCode = exitCode;
}

/** Said when the driver a command connects with is not installed: a usage error, the fix named. */
export function missingDriver(name: string, driver: string, cause: unknown): never {
  console.error(
    `${name} connects with ${driver}, which is not installed here: run \`npm install ${driver}\`.\n(${cause})`,
  );
  process.exit(2);
}

/** Prints a record as aligned `name value` lines, leaving out what it does not have. */
export function recordLines(record: Record<string, unknown>): string[] {
  return Object.entries(record)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([name, value]) => `${name.padEnd(12)} ${value}`);
}
