#!/usr/bin/env node
/**
 * `idemkit`: what an operator asks of the records in PostgreSQL, from the database at DATABASE_URL:
 *
 *   idemkit show KEY [--path P] [--scope S] [--body]   one key's records: state, age, fence, fingerprint, answer
 *   idemkit list [--stuck] [--limit N]                 the records in progress (--stuck: their lease ended)
 *   idemkit stats [--since 1h]                         per path: records made in the window, by how they ended
 *
 * `--json` prints one JSON document instead of lines; `--table` names a table other than `idempotency_keys`. Exit
 * codes a script can use: 0 done, 1 the database failed (unreachable, or the table missing: said as such), 2 a usage
 * error, 3 `show` found nothing. Purging is `idemkit-purge`.
 */
import { parseArgs } from "node:util";
import { isSealedBody } from "@idemkit/core/internal";

const USAGE = `usage: DATABASE_URL=postgres://… idemkit <command> [options]

  show KEY [--path P] [--scope S] [--body]   one key's records: state, age, fence, fingerprint and stored status;
                                             --body prints the stored answer too (sealed when encryptedStore wrote it)
  list [--stuck] [--limit N]                 records in progress, oldest first (--stuck: their lease has ended)
  stats [--since AGE]                        per path, the records made in the last AGE (default 1h): completed by
                                             status, in progress, stuck

  --json          one JSON document instead of lines
  --table NAME    the records' table (default idempotency_keys; schema.table for another schema)

Exit codes: 0 done, 1 the database failed, 2 a usage error, 3 show found nothing. Purge: idemkit-purge.
Needs the "postgres" package (npm install postgres).`;

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

type Row = Record<string, unknown>;

function usageError(message?: string): never {
  if (message) console.error(`idemkit: ${message}`);
  console.error(USAGE);
  process.exit(2);
}

const { values, positionals } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        path: { type: "string" },
        scope: { type: "string" },
        body: { type: "boolean" },
        stuck: { type: "boolean" },
        limit: { type: "string", default: "50" },
        since: { type: "string", default: "1h" },
        json: { type: "boolean" },
        table: { type: "string", default: "idempotency_keys" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    return usageError((error as Error).message);
  }
})();

if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const [command, ...operands] = positionals;
if (!command || !["show", "list", "stats"].includes(command)) usageError(command && `unknown command "${command}"`);
if (command === "show" && operands.length !== 1) usageError("show takes one key");
if (!TABLE_NAME.test(values.table)) usageError(`--table "${values.table}" is not a table name`);
const limit = Number(values.limit);
if (!Number.isInteger(limit) || limit < 1) usageError("--limit must be a whole number, 1 or more");
const since = /^(\d+)([smhd])$/.exec(values.since);
if (!since) usageError(`--since "${values.since}" is not an age such as 30m, 1h or 7d`);
const sinceMs = Number(since[1]) * UNIT_MS[since[2] as keyof typeof UNIT_MS];
const url = process.env.DATABASE_URL;
if (!url) usageError("DATABASE_URL is not set");

const table = values.table
  .split(".")
  .map((part) => `"${part}"`)
  .join(".");

const { default: postgres } = await import("postgres").catch((cause: unknown) => {
  console.error(
    `idemkit connects with postgres.js, which is not installed here: run \`npm install postgres\`.\n(${cause})`,
  );
  process.exit(2);
});
const client = postgres(url, { max: 1, connect_timeout: 10, onnotice: () => {} });

/** What each command prints: a document for --json, lines for people, and whether it found anything. */
interface Report {
  document: unknown;
  lines: string[];
  found: boolean;
}

const RECORD_COLUMNS = `scope, path, key, state, fence, fingerprint, response_status as status,
  extract(epoch from now() - created_at)::float8 as age_s,
  extract(epoch from lease_expires_at - now())::float8 as lease_left_s,
  extract(epoch from expires_at - now())::float8 as expires_in_s`;

async function show(key: string): Promise<Report> {
  const rows = await client.unsafe<Row[]>(
    `select ${RECORD_COLUMNS}${values.body ? ", response_body as body" : ""} from ${table}
     where key = $1 and ($2::text is null or path = $2) and ($3::text is null or scope = $3)
     order by created_at`,
    [key, values.path ?? null, values.scope ?? null],
  );
  const records = rows.map(recordOf);
  return {
    document: records,
    found: records.length > 0,
    lines:
      records.length === 0
        ? [`no record of key ${key}${values.path ? ` on ${values.path}` : ""}`]
        : records.flatMap((record, index) => [
            ...(index > 0 ? [""] : []),
            ...Object.entries(record)
              .filter(([, value]) => value !== null)
              .map(([name, value]) => `${name.padEnd(12)} ${value}`),
          ]),
  };
}

async function list(): Promise<Report> {
  const rows = await client.unsafe<Row[]>(
    `select ${RECORD_COLUMNS} from ${table}
     where state = 'in_progress' and (not $1::boolean or lease_expires_at <= now())
     order by created_at limit $2::int`,
    [values.stuck ?? false, limit],
  );
  const records = rows.map(recordOf);
  return {
    document: records,
    found: true,
    lines:
      records.length === 0
        ? [values.stuck ? "no stuck record" : "no record in progress"]
        : records.map(
            (record) =>
              `${record.path}  key ${record.key}  scope ${record.scope}  age ${record.ageS}s  ` +
              (record.leaseLeftS !== null && record.leaseLeftS <= 0 ? "stuck: its lease ended" : "running"),
          ),
  };
}

async function stats(): Promise<Report> {
  const rows = await client.unsafe<Row[]>(
    `select path,
       count(*) filter (where state = 'completed' and response_status < 400)::int as succeeded,
       count(*) filter (where state = 'completed' and response_status between 400 and 499)::int as refused_4xx,
       count(*) filter (where state = 'completed' and response_status >= 500)::int as failed_5xx,
       count(*) filter (where state = 'in_progress' and lease_expires_at > now())::int as running,
       count(*) filter (where state = 'in_progress' and lease_expires_at <= now())::int as stuck
     from ${table} where created_at >= now() - $1::float8 * interval '1 millisecond'
     group by path order by path`,
    [sinceMs],
  );
  const paths = rows.map((row) => ({
    path: String(row.path),
    succeeded: Number(row.succeeded),
    refused4xx: Number(row.refused_4xx),
    failed5xx: Number(row.failed_5xx),
    running: Number(row.running),
    stuck: Number(row.stuck),
  }));
  return {
    document: { since: values.since, paths },
    found: true,
    lines: [
      `records made in the last ${values.since} (replays, conflicts and mismatches are not records: see the idemkit.calls metric)`,
      ...paths.map(
        (path) =>
          `${path.path}  succeeded ${path.succeeded}  4xx ${path.refused4xx}  5xx ${path.failed5xx}  ` +
          `running ${path.running}  stuck ${path.stuck}`,
      ),
    ],
  };
}

function recordOf(row: Row) {
  const seconds = (value: unknown) => (value === null ? null : Math.round(Number(value) * 10) / 10);
  const body = typeof row.body === "string" ? row.body : undefined;
  return {
    scope: String(row.scope),
    path: String(row.path),
    key: String(row.key),
    state: String(row.state),
    fence: Number(row.fence),
    fingerprint: String(row.fingerprint),
    status: row.status === null ? null : Number(row.status),
    ageS: seconds(row.age_s),
    leaseLeftS: seconds(row.lease_left_s),
    expiresInS: seconds(row.expires_in_s),
    ...(body !== undefined && { body: isSealedBody(body) ? "(sealed by encryptedStore)" : body }),
  };
}

/** A database failure, said as what the operator should do about it. */
function described(error: unknown): string {
  const { code, message } = error as { code?: string; message?: string };
  if (code === "42P01") {
    return `the table ${values.table} does not exist in this database: run idemkit's migration, or name the table with --table`;
  }
  if (
    code === "ECONNREFUSED" ||
    code === "ENOTFOUND" ||
    code === "CONNECT_TIMEOUT" ||
    code === "28P01" ||
    code === "3D000"
  ) {
    return `cannot reach the database at DATABASE_URL (${code}: ${message})`;
  }
  return `the database failed: ${message ?? String(error)}`;
}

let exitCode = 0;
try {
  const report =
    command === "show" ? await show(String(operands[0])) : command === "list" ? await list() : await stats();
  console.log(values.json ? JSON.stringify(report.document, null, 2) : report.lines.join("\n"));
  if (!report.found) exitCode = 3;
} catch (error) {
  console.error(`idemkit: ${described(error)}`);
  exitCode = 1;
} finally {
  await client.end({ timeout: 1 });
}
process.exit(exitCode);
