/**
 * What a purge command of idemkit's does, whichever tables it purges (`idemkit-purge`, `idemkit-outbox-purge`): an
 * option per table (`--table`), `--batch-size` and its own AGE options, on the same command line as the inspecting
 * commands (DATABASE_URL, postgres.js loaded only once a database is needed, so `--help` works without it; the same
 * exit codes: 0 done, 1 the database failed, 2 a usage error), and a line, or `--json` a document, of what it
 * deleted.
 */
import { wrongCount } from "@idemkit/command-line";
import type { AnyPgDatabase } from "./database.js";
import { runInspectCommand } from "./inspect-command.js";
import type { TableName } from "./table-name.js";

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** An AGE option as given (`7d`) and in ms. */
export interface Age {
  text: string;
  ms: number;
}

/** An AGE (`90s`, `30m`, `12h`, `14d`) in ms; NaN when it is not one. Every command of idemkit's reads ages so. */
export function ageMs(text: string): number {
  const match = /^(\d+)([smhd])$/.exec(text);
  return match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : Number.NaN;
}

/** What is wrong with an AGE option (`--since`, `--published`): undefined when it is an age. */
export function wrongAge(option: string, text: string): string | undefined {
  return Number.isNaN(ageMs(text)) ? `--${option} "${text}" is not an age such as 30m, 1h or 7d` : undefined;
}

export interface PurgeCommand<TAge extends string, TTable extends string> {
  /** The command's name, as its lines begin. */
  name: string;
  /** What `--help` prints, and a usage error. */
  usage: string;
  /** The tables it purges, each by its option (`table` for `--table`) with the name it has by default. */
  tables: Record<TTable, string>;
  /** Its AGE options (`--published 7d`), each undefined when left out. */
  ages: readonly TAge[];
  /** Options this command had once, each with what to run instead: refused with that, not as unknown. */
  moved?: Record<string, { run: string; from: string }>;
  /**
   * Purges with `db`, `now` the time the command started; returns what it deleted, as the document `--json` prints
   * and as lines.
   */
  purge(
    db: AnyPgDatabase,
    options: {
      now: number;
      batchSize: number;
      ages: Record<TAge, Age | undefined>;
      tables: Record<TTable, TableName>;
    },
  ): Promise<{ document: unknown; lines: string[] }>;
}

/** Runs `command` with the process's arguments and environment, setting the exit code. */
export async function runPurgeCommand<TAge extends string, TTable extends string>(
  command: PurgeCommand<TAge, TTable>,
): Promise<void> {
  const moved = command.moved ?? {};
  const stringOptions = Object.fromEntries(
    [...command.ages, ...Object.keys(moved)].map((option) => [option, { type: "string" as const }]),
  );
  const given = (values: object) => values as Record<string, string | undefined>;
  await runInspectCommand({
    name: command.name,
    usage: command.usage,
    options: { "batch-size": { type: "string", default: "1000" }, ...stringOptions },
    tables: command.tables,
    check({ values }) {
      for (const [option, instead] of Object.entries(moved)) {
        const value = given(values)[option];
        if (value === undefined) continue;
        return `--${option} moved to ${instead.from}: run \`${instead.run} ${value}\` (npm install ${instead.from}).`;
      }
      const wrongAges = command.ages.map((age) => {
        const text = given(values)[age];
        return text === undefined ? undefined : wrongAge(age, text);
      });
      // A purge of ages given none has nothing to do: said as a usage error, as a typo in a cron line would be.
      const noAge =
        command.ages.length > 0 && command.ages.every((age) => given(values)[age] === undefined)
          ? `give ${command.ages.map((age) => `--${age} AGE`).join(", ")} or more`
          : undefined;
      return wrongCount("batch-size", values["batch-size"]) ?? wrongAges.find(Boolean) ?? noAge;
    },
    async commands(client, { values, tables }) {
      const ages = Object.fromEntries(
        command.ages.map((age) => {
          const text = given(values)[age];
          return [age, text === undefined ? undefined : { text, ms: ageMs(text) }];
        }),
      ) as Record<TAge, Age | undefined>;
      // Loaded here, as postgres.js is, which it imports. The object form, which every supported drizzle-orm takes:
      // 1.0 reads a client passed first as connection options, and would connect from the PG* variables instead.
      const { drizzle } = await import("drizzle-orm/postgres-js");
      const db = drizzle({ client: client as never });
      const purged = await command.purge(db, {
        now: Date.now(),
        batchSize: Number(values["batch-size"]),
        ages,
        tables,
      });
      return { ...purged, lines: purged.lines.map((line) => `${command.name}: ${line}`), found: true };
    },
  });
}
