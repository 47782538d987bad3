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
import { parseArgs } from "node:util";
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

function usageError(message?: string): never {
  if (message) console.error(`idemkit-redis: ${message}`);
  console.error(USAGE);
  process.exit(2);
}

const { values, positionals } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        scope: { type: "string" },
        path: { type: "string" },
        body: { type: "boolean" },
        stuck: { type: "boolean" },
        limit: { type: "string", default: "50" },
        json: { type: "boolean" },
        prefix: { type: "string", default: "idemkit:" },
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
if (command === "show" && (operands.length !== 1 || !values.scope || !values.path)) {
  usageError("show takes one key, with its --scope and --path (a record's Redis key is a digest of all three)");
}
const limit = Number(values.limit);
if (!Number.isInteger(limit) || limit < 1) usageError("--limit must be a whole number, 1 or more");
const url = process.env.REDIS_URL;
if (!url) usageError("REDIS_URL is not set");

const { createClient } = await import("redis").catch((cause: unknown) => {
  console.error(
    `idemkit-redis connects with node-redis, which is not installed here: run \`npm install redis\`.\n(${cause})`,
  );
  process.exit(2);
});
// No reconnecting and no offline queue: an unreachable server is an answer, not a wait.
const client = createClient({
  url,
  disableOfflineQueue: true,
  socket: { connectTimeout: 5_000, reconnectStrategy: false },
});
client.on("error", () => {});

interface Report {
  document: unknown;
  lines: string[];
  found: boolean;
}

/** A record as the tool shows it: times as seconds from now, the answer only when asked. */
function shown(name: string, record: StoredRecord, now: number) {
  const seconds = (at: number) => Math.round((at - now) / 100) / 10;
  const body = record.state === "completed" && values.body ? record.response.body : undefined;
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

async function main(commands: ReturnType<typeof commandsOf>): Promise<Report> {
  const now = Date.now();
  if (command === "show") {
    const name = recordKeyOf(values.prefix)({
      scope: String(values.scope),
      path: String(values.path),
      key: String(operands[0]),
    });
    const record = recordOf(await commands.fields(name));
    if (!record) return { document: null, lines: [`no record of key ${operands[0]} on ${values.path}`], found: false };
    const view = shown(name, record, now);
    return {
      document: view,
      found: true,
      lines: Object.entries(view)
        .filter(([, value]) => value !== null)
        .map(([field, value]) => `${field.padEnd(12)} ${value}`),
    };
  }
  const records: Array<ReturnType<typeof shown>> = [];
  for await (const names of commands.scan(recordPattern(values.prefix), 500)) {
    for (const name of names) {
      const record = recordOf(await commands.fields(name));
      if (record) records.push(shown(name, record, now));
    }
  }
  const stuck = (record: (typeof records)[number]) => record.leaseLeftS !== null && record.leaseLeftS <= 0;
  if (command === "list") {
    const running = records
      .filter((record) => record.state === "in_progress" && (!values.stuck || stuck(record)))
      .slice(0, limit);
    return {
      document: running,
      found: true,
      lines:
        running.length === 0
          ? [values.stuck ? "no stuck record" : "no record in progress"]
          : running.map(
              (record) =>
                `${record.redisKey}  fence ${record.fence}  ${stuck(record) ? "stuck: its lease ended" : `lease ${record.leaseLeftS}s left`}`,
            ),
    };
  }
  const count = (test: (record: (typeof records)[number]) => boolean) => records.filter(test).length;
  const totals = {
    succeeded: count((record) => record.status !== null && record.status < 400),
    refused4xx: count((record) => record.status !== null && record.status >= 400 && record.status < 500),
    failed5xx: count((record) => record.status !== null && record.status >= 500),
    running: count((record) => record.state === "in_progress" && !stuck(record)),
    stuck: count((record) => record.state === "in_progress" && stuck(record)),
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

let exitCode = 0;
try {
  await client.connect();
  const report = await main(commandsOf(client as unknown as RedisClient));
  console.log(values.json ? JSON.stringify(report.document, null, 2) : report.lines.join("\n"));
  if (!report.found) exitCode = 3;
} catch (error) {
  const { code, message } = error as { code?: string; message?: string };
  console.error(
    code === "ECONNREFUSED" || code === "ENOTFOUND" || /connect|Socket/i.test(message ?? "")
      ? `idemkit-redis: cannot reach Redis at REDIS_URL (${code ?? message})`
      : `idemkit-redis: Redis failed: ${message ?? String(error)}`,
  );
  exitCode = 1;
} finally {
  await client.destroy?.();
}
// Set, not exited with: a long --json document on a piped stdout is written out whole first.
process.exitCode = exitCode;
