/**
 * What a purge command of idemkit's does, whichever tables it purges: read `--batch-size` and its own AGE options,
 * connect to DATABASE_URL with postgres.js (an optional peer, loaded only once a database is needed, so `--help`
 * works without it), purge, and print what it deleted. Exit codes: 0 done, 2 a usage error or no driver, 1 a
 * failed purge.
 */
import { parseArgs } from "node:util";
import type { AnyPgDatabase } from "./statements.js";

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** An AGE option as given (`7d`) and in ms; undefined when not given; `ms` NaN when malformed. */
export interface Age {
  text: string;
  ms: number;
}

/** An AGE (`90s`, `30m`, `12h`, `14d`) in ms; NaN when it is not one. Every command of idemkit's reads ages so. */
export function ageMs(text: string): number {
  const match = /^(\d+)([smhd])$/.exec(text);
  return match ? Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] : Number.NaN;
}

function ageOf(text: string | undefined): Age | undefined {
  return text === undefined ? undefined : { text, ms: ageMs(text) };
}

export interface PurgeCommand<TAge extends string> {
  /** The command's name, as its lines begin. */
  name: string;
  /** What `--help` prints, and a usage error. */
  usage: string;
  /** Its AGE options (`--published 7d`), each undefined when left out. */
  ages: readonly TAge[];
  /** Options this command had once, each with what to run instead: refused with that, not as unknown. */
  moved?: Record<string, { run: string; from: string }>;
  /** Purges with `db`, `now` the time the command started; returns the lines to print. */
  purge(
    db: AnyPgDatabase,
    options: { now: number; batchSize: number; ages: Record<TAge, Age | undefined> },
  ): Promise<string[]>;
}

/** Runs `command` with the process's arguments and environment, then exits. */
export async function runPurgeCommand<TAge extends string>(command: PurgeCommand<TAge>): Promise<void> {
  const moved = command.moved ?? {};
  const ageOptions = Object.fromEntries(
    [...command.ages, ...Object.keys(moved)].map((option) => [option, { type: "string" as const }]),
  );
  const { values } = parseArgs({
    options: {
      "batch-size": { type: "string", default: "1000" },
      help: { type: "boolean", short: "h" },
      ...ageOptions,
    },
  });
  if (values.help) {
    console.log(command.usage);
    process.exit(0);
  }
  const given = values as Record<string, string | boolean | undefined>;
  for (const [option, instead] of Object.entries(moved)) {
    if (given[option] === undefined) continue;
    console.error(
      `${command.name}: --${option} moved to ${instead.from}: run \`${instead.run} ${given[option]}\` ` +
        `(npm install ${instead.from}).`,
    );
    process.exit(2);
  }
  const batchSize = Number(values["batch-size"]);
  const ages = Object.fromEntries(command.ages.map((age) => [age, ageOf(given[age] as string | undefined)])) as Record<
    TAge,
    Age | undefined
  >;
  const url = process.env.DATABASE_URL;
  if (
    !url ||
    !Number.isInteger(batchSize) ||
    batchSize < 1 ||
    Object.values<Age | undefined>(ages).some((age) => Number.isNaN(age?.ms))
  ) {
    console.error(command.usage);
    process.exit(2);
  }
  const [{ default: postgres }, { drizzle }] = await Promise.all([
    import("postgres"),
    import("drizzle-orm/postgres-js"),
  ]).catch((cause: unknown) => {
    console.error(
      `${command.name} connects with postgres.js, which is not installed here: run \`npm install postgres\`.\n(${cause})`,
    );
    process.exit(2);
  });
  const client = postgres(url, { max: 1 });
  try {
    // The object form, which every supported drizzle-orm takes: 1.0 reads a client passed first as connection
    // options, and would connect from the PG* variables instead.
    const db = drizzle({ client });
    for (const line of await command.purge(db, { now: Date.now(), batchSize, ages })) {
      console.log(`${command.name}: ${line}`);
    }
  } finally {
    await client.end();
  }
}
