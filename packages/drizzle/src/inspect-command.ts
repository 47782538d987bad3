/**
 * What an inspecting command of idemkit's does, whichever tables it reads (`idemkit`, `idemkit-outbox`): read its
 * command and options, connect to DATABASE_URL with postgres.js (an optional peer, loaded only once a database is
 * needed), run, and print one JSON document (`--json`) or lines for people. Exit codes a script can use: 0 done,
 * 1 the database failed (unreachable, or the table missing: said as such), 2 a usage error, 3 nothing found.
 */
import { type ParseArgsConfig, parseArgs } from "node:util";

/** What a command reads with: postgres.js's `unsafe`, typed here so that this file needs none of its types. */
export interface SqlClient {
  unsafe(query: string, parameters?: unknown[]): Promise<Array<Record<string, unknown>>>;
}

/** What a command printed: the document for `--json`, lines for people, and whether it found what it was asked. */
export interface InspectReport {
  document: unknown;
  lines: string[];
  found: boolean;
}

type Options = NonNullable<ParseArgsConfig["options"]>;

export interface InspectCommand<TOptions extends Options> {
  /** The command's name, as its messages begin. */
  name: string;
  /** What `--help` prints, and a usage error. */
  usage: string;
  /** Its subcommands. */
  commands: readonly string[];
  /** Its options besides `--json`, `--table` and `--help`. */
  options: TOptions;
  /** The table it reads by default, which `--table` replaces. */
  table: string;
  /** Checks the arguments; returns what is wrong with them, if anything. */
  check?(args: Args<TOptions>): string | undefined;
  /** Runs the subcommand with a postgres.js client and the table's quoted name. */
  run(client: SqlClient, args: Args<TOptions>): Promise<InspectReport>;
}

export interface Args<TOptions extends Options> {
  command: string;
  operands: string[];
  values: ReturnType<typeof parseArgs<{ options: TOptions; allowPositionals: true }>>["values"];
  /** The table's name as given, and quoted for SQL. */
  table: { name: string; sql: string };
}

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/**
 * Runs `spec` with the process's arguments and environment. It sets the exit code and lets the process end by
 * itself, so a long `--json` document is written out whole on a piped stdout first.
 */
export async function runInspectCommand<TOptions extends Options>(spec: InspectCommand<TOptions>): Promise<void> {
  const usageError = (message?: string): never => {
    if (message) console.error(`${spec.name}: ${message}`);
    console.error(spec.usage);
    process.exit(2);
  };
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        ...spec.options,
        json: { type: "boolean" },
        table: { type: "string", default: spec.table },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    return usageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(spec.usage);
    process.exit(0);
  }
  const [command, ...operands] = positionals;
  if (!command || !spec.commands.includes(command)) return usageError(command && `unknown command "${command}"`);
  const tableName = String(values.table);
  if (!TABLE_NAME.test(tableName)) return usageError(`--table "${tableName}" is not a table name`);
  const args = {
    command,
    operands,
    values,
    table: {
      name: tableName,
      sql: tableName
        .split(".")
        .map((part) => `"${part}"`)
        .join("."),
    },
  } as Args<TOptions>;
  const wrong = spec.check?.(args);
  if (wrong) return usageError(wrong);
  const url = process.env.DATABASE_URL;
  if (!url) return usageError("DATABASE_URL is not set");

  const { default: connect } = await import("postgres").catch((cause: unknown) => {
    console.error(
      `${spec.name} connects with postgres.js, which is not installed here: run \`npm install postgres\`.\n(${cause})`,
    );
    return process.exit(2);
  });
  const client = connect(url, { max: 1, connect_timeout: 10, onnotice: () => {} });
  let exitCode = 0;
  try {
    const report = await spec.run(client as unknown as SqlClient, args);
    console.log(values.json ? JSON.stringify(report.document, null, 2) : report.lines.join("\n"));
    if (!report.found) exitCode = 3;
  } catch (error) {
    console.error(`${spec.name}: ${described(error, tableName)}`);
    exitCode = 1;
  } finally {
    await client.end({ timeout: 1 });
  }
  process.exitCode = exitCode;
}

/** A database failure, said as what the operator should do about it. */
function described(error: unknown, table: string): string {
  const { code, message } = error as { code?: string; message?: string };
  if (code === "42P01") {
    return `the table ${table} does not exist in this database: run idemkit's migration, or name the table with --table`;
  }
  const unreachable = ["ECONNREFUSED", "ENOTFOUND", "CONNECT_TIMEOUT", "28P01", "3D000"];
  if (code && unreachable.includes(code)) return `cannot reach the database at DATABASE_URL (${code}: ${message})`;
  return `the database failed: ${message ?? String(error)}`;
}

/** Prints a record as aligned `name value` lines, leaving out what it does not have. */
export function recordLines(record: Record<string, unknown>): string[] {
  return Object.entries(record)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([name, value]) => `${name.padEnd(12)} ${value}`);
}
