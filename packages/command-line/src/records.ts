/**
 * What the inspecting commands of key-value stores (`idemkit-redis`, `idemkit-dynamodb`) print of a record, and
 * how their `list` and `stats` read: the same fields, the same stuck rule and the same totals on every store, each
 * record named by where the store keeps it (a record's key there is a digest of its id).
 */

import { isSealedBody } from "@idemkit/core/internal";
import type { StoredRecord } from "@idemkit/core/store";
import { type CommandArgs, type InspectReport, wrongCount } from "./command-line.js";

/** The options of a key-value store's inspecting command (besides its own, such as Redis's `--prefix`). */
export const RECORD_OPTIONS = {
  scope: { type: "string" },
  path: { type: "string" },
  body: { type: "boolean" },
  stuck: { type: "boolean" },
  limit: { type: "string", default: "50" },
} as const;

/**
 * What is wrong with an inspecting command's arguments, if anything: `show` needs the scope and path with its key,
 * as the store keeps a record under a digest of all three (its `storedAt`, such as "Redis key").
 */
export function recordArgsProblem(
  { command, operands, values }: CommandArgs<typeof RECORD_OPTIONS>,
  storedAt: string,
): string | undefined {
  if (command === "show" && (operands.length !== 1 || !values.scope || !values.path)) {
    return `show takes one key, with its --scope and --path (a record's ${storedAt} is a digest of all three)`;
  }
  return wrongCount("limit", values.limit);
}

/** Whether the records read so far hold what `list` shows, so that it reads no more. */
export function hasEnoughListed(stuck: boolean | undefined, limit: number): (records: RecordView[]) => boolean {
  return (records) => records.filter((record) => isListed(record, stuck)).length >= limit;
}

/** A record as a command shows it: times as seconds from now, the answer only when asked. */
export interface RecordView {
  /** Where the store keeps it: its Redis key, its DynamoDB partition key. */
  storedAt: string;
  state: StoredRecord["state"];
  fence: number;
  fingerprint: string;
  status: number | null;
  leaseLeftS: number | null;
  expiresInS: number;
  body?: string;
}

/** The view of `record`, kept at `storedAt`, at `now`. */
export function recordView(storedAt: string, record: StoredRecord, now: number, withBody = false): RecordView {
  const seconds = (at: number) => Math.round((at - now) / 100) / 10;
  const body = record.state === "completed" && withBody ? record.response.body : undefined;
  return {
    storedAt,
    state: record.state,
    fence: record.fence,
    fingerprint: record.fingerprint,
    status: record.state === "completed" ? record.response.status : null,
    leaseLeftS: record.state === "in_progress" ? seconds(record.leaseExpiresAt) : null,
    expiresInS: seconds(record.expiresAt),
    ...(body !== undefined && { body: isSealedBody(body) ? "(sealed by encryptedStore)" : body }),
  };
}

/** In progress, its lease ended: the call that held it died or hangs, and the next retry takes it over. */
export function isStuck(record: RecordView): boolean {
  return record.leaseLeftS !== null && record.leaseLeftS <= 0;
}

/** Whether `list` shows the record: in progress, and stuck when `--stuck` asks for those alone. */
export function isListed(record: RecordView, stuck: boolean | undefined): boolean {
  return record.state === "in_progress" && (!stuck || isStuck(record));
}

/** `show`'s report: the record under `field` (`redisKey`, `partitionKey`), or that there is none for the key. */
export function showReport(field: string, view: RecordView | undefined, key: string, path: string): InspectReport {
  if (!view) return { document: null, lines: [`no record of key ${key} on ${path}`], found: false };
  const { storedAt, ...rest } = view;
  const document = { [field]: storedAt, ...rest };
  return { document, found: true, lines: recordLines(document) };
}

/** `list`'s report: the first `limit` records in progress (stuck ones alone with `stuck`), each on a line. */
export function listReport(
  field: string,
  records: RecordView[],
  { stuck, limit }: { stuck: boolean | undefined; limit: number },
): InspectReport {
  const running = records.filter((record) => isListed(record, stuck)).slice(0, limit);
  return {
    document: running.map(({ storedAt, ...rest }) => ({ [field]: storedAt, ...rest })),
    found: true,
    lines:
      running.length === 0
        ? [stuck ? "no stuck record" : "no record in progress"]
        : running.map(
            (record) =>
              `${record.storedAt}  fence ${record.fence}  ${isStuck(record) ? "stuck: its lease ended" : `lease ${record.leaseLeftS}s left`}`,
          ),
  };
}

/** `stats`'s report: the records `holder` keeps, completed by status, running and stuck. */
export function statsReport(holder: string, records: RecordView[]): InspectReport {
  const count = (test: (record: RecordView) => boolean) => records.filter(test).length;
  const totals = {
    succeeded: count((record) => record.status !== null && record.status < 400),
    refused4xx: count((record) => record.status !== null && record.status >= 400 && record.status < 500),
    failed5xx: count((record) => record.status !== null && record.status >= 500),
    running: count((record) => record.state === "in_progress" && !isStuck(record)),
    stuck: count((record) => record.state === "in_progress" && isStuck(record)),
  };
  return {
    document: totals,
    found: true,
    lines: [
      `records ${holder} holds (each until its TTL; replays, conflicts and mismatches are the idemkit.calls metric's)`,
      Object.entries(totals)
        .map(([name, value]) => `${name} ${value}`)
        .join("  "),
    ],
  };
}

/** Prints a record as aligned `name value` lines, leaving out what it does not have. */
export function recordLines(record: Record<string, unknown>): string[] {
  return Object.entries(record)
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([name, value]) => `${name.padEnd(12)} ${value}`);
}
