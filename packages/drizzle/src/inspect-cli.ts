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
import { recordLines, wrongCount } from "@idemkit/command-line";
import { isSealedBody } from "@idemkit/core/internal";
import { type Args, type InspectReport, runInspectCommand, type SqlClient } from "./inspect-command.js";
import { ageMs, wrongAge } from "./purge-command.js";

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

const OPTIONS = {
  path: { type: "string" },
  scope: { type: "string" },
  body: { type: "boolean" },
  stuck: { type: "boolean" },
  limit: { type: "string", default: "50" },
  since: { type: "string", default: "1h" },
} as const;
type Given = Args<typeof OPTIONS>;
type Row = Record<string, unknown>;

const RECORD_COLUMNS = `scope, path, key, state, fence, fingerprint, response_status as status,
  extract(epoch from now() - created_at)::float8 as age_s,
  extract(epoch from lease_expires_at - now())::float8 as lease_left_s,
  extract(epoch from expires_at - now())::float8 as expires_in_s`;

async function show(client: SqlClient, { operands, values, tables }: Given): Promise<InspectReport> {
  const key = String(operands[0]);
  const rows = await client.unsafe(
    `select ${RECORD_COLUMNS}${values.body ? ", response_body as body" : ""} from ${tables.table.sql}
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
        : records.flatMap((record, index) => [...(index > 0 ? [""] : []), ...recordLines(record)]),
  };
}

async function list(client: SqlClient, { values, tables }: Given): Promise<InspectReport> {
  const rows = await client.unsafe(
    `select ${RECORD_COLUMNS} from ${tables.table.sql}
     where state = 'in_progress' and (not $1::boolean or lease_expires_at <= now())
     order by created_at limit $2::int`,
    [values.stuck ?? false, Number(values.limit)],
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

async function stats(client: SqlClient, { values, tables }: Given): Promise<InspectReport> {
  const rows = await client.unsafe(
    `select path,
       count(*) filter (where state = 'completed' and response_status < 400)::int as succeeded,
       count(*) filter (where state = 'completed' and response_status between 400 and 499)::int as refused_4xx,
       count(*) filter (where state = 'completed' and response_status >= 500)::int as failed_5xx,
       count(*) filter (where state = 'in_progress' and lease_expires_at > now())::int as running,
       count(*) filter (where state = 'in_progress' and lease_expires_at <= now())::int as stuck
     from ${tables.table.sql} where created_at >= now() - $1::float8 * interval '1 millisecond'
     group by path order by path`,
    [ageMs(String(values.since))],
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

await runInspectCommand({
  name: "idemkit",
  usage: USAGE,
  commands: { show, list, stats },
  options: OPTIONS,
  tables: { table: "idempotency_keys" },
  check({ command, operands, values }) {
    if (command === "show" && operands.length !== 1) return "show takes one key";
    return wrongCount("limit", values.limit) ?? wrongAge("since", String(values.since));
  },
});
