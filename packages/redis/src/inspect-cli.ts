#!/usr/bin/env node
/**
 * `idemkit-redis`: what an operator asks of the records in Redis, from the server at REDIS_URL. A record's key is a
 * digest of its id, so `show` needs the scope and path with the key, and `list` names records by their Redis key:
 *
 *   idemkit-redis show KEY --scope S --path P [--body]   one record: state, fence, fingerprint, lease, expiry, status
 *   idemkit-redis list [--stuck] [--limit N]             the records in progress (--stuck: their lease ended)
 *   idemkit-redis stats                                  the records Redis holds, by how they ended
 *
 * `--json` prints one JSON document; `--prefix` is the store's (default `idemkit:`). Exit codes: 0 done, 1 Redis
 * failed (unreachable: said as such), 2 a usage error, 3 `show` found nothing.
 */
import {
  type CommandArgs,
  type InspectReport,
  missingDriver,
  recordLines,
  runCommandLine,
  wrongCount,
} from "@idemkit/command-line";
import type { StoredRecord } from "@idemkit/core";
import { isSealedBody } from "@idemkit/core/internal";
import { commandsOf, type RedisClient } from "./client.js";
import { recordKeyOf, recordOf, recordPattern } from "./store.js";

const USAGE = `usage: REDIS_URL=redis://… idemkit-redis <command> [options]

  show KEY --scope S --path P [--body]   one record: state, fence, fingerprint, lease, expiry and stored status;
                                         --body prints the stored answer too (sealed when encryptedStore wrote it)
  list [--stuck] [--limit N]             records in progress (--stuck: their lease has ended), by Redis key
  stats                                  the records Redis holds: completed by status, running, stuck

  --json           one JSON document instead of lines
  --prefix PREFIX  the store's prefix (default idemkit:)

Exit codes: 0 done, 1 Redis failed, 2 a usage error, 3 show found nothing. Needs the "redis" package (npm install redis).`;

const OPTIONS = {
  scope: { type: "string" },
  path: { type: "string" },
  body: { type: "boolean" },
  stuck: { type: "boolean" },
  limit: { type: "string", default: "50" },
  prefix: { type: "string", default: "idemkit:" },
} as const;
type Given = CommandArgs<typeof OPTIONS>;

/** What the tool asks of node-redis, besides what the store's commands need. */
interface InspectingClient {
  hmGet(key: string, fields: string[]): Promise<Array<string | null>>;
}

/** The fields `list` and `stats` read of each record: never its answer, which may be large. */
const SUMMARY_FIELDS = ["state", "fingerprint", "fence", "lease", "expires", "status"];

/** A record as the tool shows it: times as seconds from now, the answer only when asked. */
function shown(name: string, record: StoredRecord, now: number, withBody = false) {
  const seconds = (at: number) => Math.round((at - now) / 100) / 10;
  const body = record.state === "completed" && withBody ? record.response.body : undefined;
  return {
    redisKey: name,
    state: record.state,
    fence: record.fence,
    fingerprint: record.fingerprint,
    status: record.state === "completed" ? record.response.status : null,
    leaseLeftS: record.state === "in_progress" ? seconds(record.leaseExpiresAt) : null,
    expiresInS: seconds(record.expiresAt),
    ...(body !== undefined && { body: isSealedBody(body) ? "(sealed by encryptedStore)" : body }),
  };
}
type Shown = ReturnType<typeof shown>;

const isStuck = (record: Shown) => record.leaseLeftS !== null && record.leaseLeftS <= 0;

async function show(client: RedisClient, { operands, values }: Given): Promise<InspectReport> {
  const id = { scope: String(values.scope), path: String(values.path), key: String(operands[0]) };
  const name = recordKeyOf(values.prefix)(id);
  const record = recordOf(await commandsOf(client).fields(name));
  if (!record) return { document: null, lines: [`no record of key ${id.key} on ${id.path}`], found: false };
  const view = shown(name, record, Date.now(), values.body);
  return { document: view, found: true, lines: recordLines(view) };
}

/**
 * The records' summaries, one SCAN batch at a time, each batch's fields read at once (node-redis pipelines the
 * commands sent in one tick), until `enough` has them.
 */
async function summaries(client: RedisClient, prefix: string, enough: (records: Shown[]) => boolean) {
  const now = Date.now();
  const records: Shown[] = [];
  const reader = client as unknown as InspectingClient;
  for await (const names of commandsOf(client).scan(recordPattern(prefix), 500)) {
    const replies = await Promise.all(names.map((name) => reader.hmGet(name, SUMMARY_FIELDS)));
    names.forEach((name, index) => {
      const reply = replies[index] ?? [];
      const record = recordOf(Object.fromEntries(SUMMARY_FIELDS.map((field, at) => [field, reply[at] ?? undefined])));
      if (record) records.push(shown(name, record, now));
    });
    if (enough(records)) break;
  }
  return records;
}

async function list(client: RedisClient, { values }: Given): Promise<InspectReport> {
  const limit = Number(values.limit);
  const listed = (record: Shown) => record.state === "in_progress" && (!values.stuck || isStuck(record));
  const records = await summaries(client, values.prefix, (seen) => seen.filter(listed).length >= limit);
  const running = records.filter(listed).slice(0, limit);
  return {
    document: running,
    found: true,
    lines:
      running.length === 0
        ? [values.stuck ? "no stuck record" : "no record in progress"]
        : running.map(
            (record) =>
              `${record.redisKey}  fence ${record.fence}  ${isStuck(record) ? "stuck: its lease ended" : `lease ${record.leaseLeftS}s left`}`,
          ),
  };
}

async function stats(client: RedisClient, { values }: Given): Promise<InspectReport> {
  const records = await summaries(client, values.prefix, () => false);
  const count = (test: (record: Shown) => boolean) => records.filter(test).length;
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
      "records Redis holds (each until its TTL; replays, conflicts and mismatches are the idemkit.calls metric's)",
      Object.entries(totals)
        .map(([name, value]) => `${name} ${value}`)
        .join("  "),
    ],
  };
}

await runCommandLine({
  name: "idemkit-redis",
  usage: USAGE,
  commands: { show, list, stats },
  options: OPTIONS,
  urlVariable: "REDIS_URL",
  check({ command, operands, values }) {
    if (command === "show" && (operands.length !== 1 || !values.scope || !values.path)) {
      return "show takes one key, with its --scope and --path (a record's Redis key is a digest of all three)";
    }
    return wrongCount("limit", values.limit);
  },
  async connect(url) {
    const { createClient } = await import("redis").catch((cause: unknown) =>
      missingDriver("idemkit-redis", "redis", cause),
    );
    // No reconnecting and no offline queue: an unreachable server is an answer, not a wait.
    const client = createClient({
      url,
      disableOfflineQueue: true,
      socket: { connectTimeout: 5_000, reconnectStrategy: false },
    });
    client.on("error", () => {});
    const close = async () => void client.destroy();
    await client.connect().catch(async (error: unknown) => {
      await close();
      throw error;
    });
    return { client: client as unknown as RedisClient, close };
  },
  failure(error) {
    const { code, message } = error as { code?: string; message?: string };
    return code === "ECONNREFUSED" || code === "ENOTFOUND" || /connect|Socket/i.test(message ?? "")
      ? `cannot reach Redis at REDIS_URL (${code ?? message})`
      : `Redis failed: ${message ?? String(error)}`;
  },
});
