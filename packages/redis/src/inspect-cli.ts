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
  hasEnoughListed,
  type InspectReport,
  listReport,
  missingDriver,
  RECORD_OPTIONS,
  type RecordView,
  recordArgsProblem,
  recordView,
  runCommandLine,
  showReport,
  statsReport,
} from "@idemkit/command-line";
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
  ...RECORD_OPTIONS,
  prefix: { type: "string", default: "idemkit:" },
} as const;
type Given = CommandArgs<typeof OPTIONS>;

/** What the tool asks of node-redis, besides what the store's commands need. */
interface InspectingClient {
  hmGet(key: string, fields: string[]): Promise<Array<string | null>>;
}

/** The fields `list` and `stats` read of each record: never its answer, which may be large. */
const SUMMARY_FIELDS = ["state", "fingerprint", "fence", "lease", "expires", "status"];

async function show(client: RedisClient, { operands, values }: Given): Promise<InspectReport> {
  const id = { scope: String(values.scope), path: String(values.path), key: String(operands[0]) };
  const name = recordKeyOf(values.prefix)(id);
  const record = recordOf(await commandsOf(client).fields(name));
  return showReport("redisKey", record && recordView(name, record, Date.now(), values.body), id.key, id.path);
}

/**
 * The records' summaries, one SCAN batch at a time, each batch's fields read at once (node-redis pipelines the
 * commands sent in one tick), until `enough` has them.
 */
async function summaries(client: RedisClient, prefix: string, enough: (records: RecordView[]) => boolean) {
  const now = Date.now();
  const records: RecordView[] = [];
  const reader = client as unknown as InspectingClient;
  for await (const names of commandsOf(client).scan(recordPattern(prefix), 500)) {
    const replies = await Promise.all(names.map((name) => reader.hmGet(name, SUMMARY_FIELDS)));
    names.forEach((name, index) => {
      const reply = replies[index] ?? [];
      const record = recordOf(Object.fromEntries(SUMMARY_FIELDS.map((field, at) => [field, reply[at] ?? undefined])));
      if (record) records.push(recordView(name, record, now));
    });
    if (enough(records)) break;
  }
  return records;
}

async function list(client: RedisClient, { values }: Given): Promise<InspectReport> {
  const limit = Number(values.limit);
  const records = await summaries(client, values.prefix, hasEnoughListed(values.stuck, limit));
  return listReport("redisKey", records, { stuck: values.stuck, limit });
}

async function stats(client: RedisClient, { values }: Given): Promise<InspectReport> {
  return statsReport("Redis", await summaries(client, values.prefix, () => false));
}

await runCommandLine({
  name: "idemkit-redis",
  usage: USAGE,
  commands: { show, list, stats },
  options: OPTIONS,
  urlVariable: "REDIS_URL",
  check: (args) => recordArgsProblem(args, "Redis key"),
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
