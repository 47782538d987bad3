/**
 * A command on PostgreSQL, whichever tables it reads or purges (`idemkit`, `idemkit-outbox`, `idemkit-purge`,
 * `idemkit-outbox-purge`): core's command line (arguments, `--json`, exit codes) with an option per table
 * (`--table`), DATABASE_URL and postgres.js, and the database's failures said as what to do (unreachable, or a table
 * missing: exit 1, on one line).
 */
import {
  type CommandArgs,
  type CommandOptions,
  type InspectReport,
  missingDriver,
  runCommandLine,
} from "@idemkit/command-line";
import { causeChain } from "@idemkit/core/internal";
import { databaseMessageOf, sqlStateOf } from "./driver-errors.js";
import { type TableName, tableNameOf } from "./table-name.js";

/** What a command reads with: postgres.js's `unsafe`, typed here so that this file needs none of its types. */
export interface SqlClient {
  unsafe(query: string, parameters?: unknown[]): Promise<Array<Record<string, unknown>>>;
}

export type { InspectReport };

type Options = CommandOptions;

/** What runs a command, or one of its subcommands, on a postgres.js client. */
export type SqlRun<TOptions extends Options, TTable extends string> = (
  client: SqlClient,
  args: Args<TOptions, TTable>,
) => Promise<InspectReport>;

export interface InspectCommand<TOptions extends Options, TTable extends string> {
  /** The command's name, as its messages begin. */
  name: string;
  /** What `--help` prints, and a usage error. */
  usage: string;
  /** Its subcommands, each by name with what runs it; or, for a command without subcommands, what runs it. */
  commands: Record<string, SqlRun<TOptions, TTable>> | SqlRun<TOptions, TTable>;
  /** Its options besides `--json`, `--help` and its tables'. */
  options: TOptions;
  /** The tables it reads or writes, each by its option (`table` for `--table`) with the name it has by default. */
  tables: Record<TTable, string>;
  /** Checks the arguments; returns what is wrong with them, if anything. */
  check?(args: Args<TOptions, TTable>): string | undefined;
}

export interface Args<TOptions extends Options, TTable extends string = "table"> extends CommandArgs<TOptions> {
  /** Each table, by its option, as the command line names it. */
  tables: Record<TTable, TableName>;
}

/**
 * Runs `spec` with the process's arguments and environment, on PostgreSQL: its tables' options and DATABASE_URL,
 * through postgres.js (an optional peer, loaded only once a database is needed).
 */
export async function runInspectCommand<TOptions extends Options, TTable extends string = "table">(
  spec: InspectCommand<TOptions, TTable>,
): Promise<void> {
  const tableOptions = Object.keys(spec.tables) as TTable[];
  const givenTables = (args: CommandArgs<Options>) =>
    tableOptions.map(
      (option) => [option, tableNameOf(option, String((args.values as Record<string, unknown>)[option]))] as const,
    );
  const withTables = (args: CommandArgs<Options>): Args<TOptions, TTable> => {
    // Only once `check` has refused every name that is not a table's.
    const tables = Object.fromEntries(givenTables(args)) as Record<TTable, TableName>;
    return { ...(args as CommandArgs<TOptions>), tables };
  };
  const ran = (run: SqlRun<TOptions, TTable>) => (client: SqlClient, args: CommandArgs<Options>) =>
    run(client, withTables(args));
  await runCommandLine<Options, SqlClient>({
    name: spec.name,
    usage: spec.usage,
    commands:
      typeof spec.commands === "function"
        ? ran(spec.commands)
        : Object.fromEntries(Object.entries(spec.commands).map(([name, run]) => [name, ran(run)])),
    options: {
      ...spec.options,
      ...Object.fromEntries(tableOptions.map((option) => [option, { type: "string", default: spec.tables[option] }])),
    },
    urlVariable: "DATABASE_URL",
    check(args) {
      const names = givenTables(args).map(([, name]) => name);
      return names.find((name): name is string => typeof name === "string") ?? spec.check?.(withTables(args));
    },
    async connect(url) {
      const { default: connect } = await import("postgres").catch((cause: unknown) =>
        missingDriver(spec.name, "postgres", cause),
      );
      const client = connect(url, { max: 1, connect_timeout: 10, onnotice: () => {} });
      return { client: client as unknown as SqlClient, close: () => client.end({ timeout: 1 }) };
    },
    failure: (error) => described(error, tableOptions),
  });
}

/** What drivers call a database they could not reach or were let into: said as such, not as a failed query. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "CONNECT_TIMEOUT",
  "28000",
  "28P01",
  "3D000",
]);

/**
 * A database failure, said as what the operator should do about it. Drizzle wraps a driver's error in one whose
 * message holds the whole query, so each is read from the cause that says it.
 */
function described(error: unknown, tableOptions: string[]): string {
  if (sqlStateOf(error) === "42P01") {
    const options = tableOptions.map((option) => `--${option}`).join(" or ");
    return `${databaseMessageOf(error)} in this database: run idemkit's migration, or name the table with ${options}`;
  }
  const causes = [...causeChain(error)] as Array<{ code?: unknown; message?: unknown }>;
  const away = causes.find(({ code }) => typeof code === "string" && UNREACHABLE.has(code));
  if (away) return `cannot reach the database at DATABASE_URL (${away.code}: ${away.message})`;
  const innermost = causes.at(-1);
  return `the database failed: ${innermost?.message ?? String(error)}`;
}
