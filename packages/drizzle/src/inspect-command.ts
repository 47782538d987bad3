/**
 * An inspecting command on PostgreSQL, whichever table it reads (`idemkit`, `idemkit-outbox`): core's command line
 * (arguments, `--json`, exit codes) with `--table`, DATABASE_URL and postgres.js, and the database's failures said
 * as what to do (unreachable, or the table missing: exit 1).
 */
import {
  type CommandArgs,
  type CommandOptions,
  type InspectReport,
  missingDriver,
  runCommandLine,
} from "@idemkit/core/command-line";

/** What a command reads with: postgres.js's `unsafe`, typed here so that this file needs none of its types. */
export interface SqlClient {
  unsafe(query: string, parameters?: unknown[]): Promise<Array<Record<string, unknown>>>;
}

export type { InspectReport };

type Options = CommandOptions;
const TABLE_OPTION = { table: { type: "string" } } as const;

export interface InspectCommand<TOptions extends Options> {
  /** The command's name, as its messages begin. */
  name: string;
  /** What `--help` prints, and a usage error. */
  usage: string;
  /** Its subcommands, each by name with what runs it on a postgres.js client and the table's quoted name. */
  commands: Record<string, (client: SqlClient, args: Args<TOptions>) => Promise<InspectReport>>;
  /** Its options besides `--json`, `--table` and `--help`. */
  options: TOptions;
  /** The table it reads by default, which `--table` replaces. */
  table: string;
  /** Checks the arguments; returns what is wrong with them, if anything. */
  check?(args: Args<TOptions>): string | undefined;
}

export interface Args<TOptions extends Options> extends CommandArgs<TOptions & typeof TABLE_OPTION> {
  /** The table's name as given, and quoted for SQL. */
  table: { name: string; sql: string };
}

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/**
 * Runs `spec` with the process's arguments and environment, on PostgreSQL: `--table` and DATABASE_URL, through
 * postgres.js (an optional peer, loaded only once a database is needed).
 */
export async function runInspectCommand<TOptions extends Options>(spec: InspectCommand<TOptions>): Promise<void> {
  const tableOf = (args: CommandArgs<TOptions & typeof TABLE_OPTION>) =>
    String((args.values as Record<string, unknown>).table);
  const withTable = (args: CommandArgs<TOptions & typeof TABLE_OPTION>): Args<TOptions> => {
    const name = tableOf(args);
    const sql = name
      .split(".")
      .map((part) => `"${part}"`)
      .join(".");
    return { ...args, table: { name, sql } };
  };
  await runCommandLine({
    name: spec.name,
    usage: spec.usage,
    commands: Object.fromEntries(
      Object.entries(spec.commands).map(([name, subcommand]) => [
        name,
        (client: SqlClient, args: CommandArgs<TOptions & typeof TABLE_OPTION>) => subcommand(client, withTable(args)),
      ]),
    ),
    options: { ...spec.options, table: { type: "string", default: spec.table } } as TOptions & typeof TABLE_OPTION,
    urlVariable: "DATABASE_URL",
    check(args) {
      const table = tableOf(args);
      if (!TABLE_NAME.test(table)) return `--table "${table}" is not a table name`;
      return spec.check?.(withTable(args));
    },
    async connect(url) {
      const { default: connect } = await import("postgres").catch((cause: unknown) =>
        missingDriver(spec.name, "postgres", cause),
      );
      const client = connect(url, { max: 1, connect_timeout: 10, onnotice: () => {} });
      return { client: client as unknown as SqlClient, close: () => client.end({ timeout: 1 }) };
    },
    failure: (error, args) => described(error, tableOf(args)),
  });
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
