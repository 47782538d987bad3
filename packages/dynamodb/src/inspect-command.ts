/**
 * `idemkit-dynamodb` (its bin is `inspect-cli.ts`): what an operator asks of the records in the table named by DYNAMODB_TABLE, with the AWS
 * SDK's own configuration (AWS_REGION, the credentials chain, AWS_ENDPOINT_URL_DYNAMODB for another endpoint).
 * A record's partition key is a digest of its id, so `show` needs the scope and path with the key, and `list` names
 * records by their partition key:
 *
 *   idemkit-dynamodb show KEY --scope S --path P [--body]   one record: state, fence, fingerprint, lease, expiry, status
 *   idemkit-dynamodb list [--stuck] [--limit N]             the records in progress (--stuck: their lease ended)
 *   idemkit-dynamodb stats                                  the records the table holds, by how they ended
 *
 * `--json` prints one JSON document. Exit codes: 0 done, 1 DynamoDB failed (unreachable, not answering, no
 * credentials, no such table: said as such), 2 a usage error, 3 `show` found nothing.
 */
import { DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import {
  type CommandArgs,
  hasEnoughListed,
  type InspectReport,
  listReport,
  RECORD_OPTIONS,
  type RecordView,
  recordArgsProblem,
  recordView,
  runCommandLine,
  showReport,
  statsReport,
} from "@idemkit/command-line";
import { isIdempotencyError } from "@idemkit/core";
import { RecordState } from "@idemkit/core/store";
import { keyOf, namesIn, num, PARTITION_KEY, recordKeyOf, recordOfItem, scanPages, str } from "./items.js";
import { dynamoStore } from "./store.js";
import { tableProblemOf } from "./table.js";

const USAGE = `usage: DYNAMODB_TABLE=… idemkit-dynamodb <command> [options]

  show KEY --scope S --path P [--body]   one record: state, fence, fingerprint, lease, expiry and stored status;
                                         --body prints the stored answer too (sealed when encryptedStore wrote it)
  list [--stuck] [--limit N]             records in progress (--stuck: their lease has ended), by partition key
  stats                                  the records the table holds: completed by status, running, stuck

  --json           one JSON document instead of lines

The region and credentials are the AWS SDK's (AWS_REGION, AWS_PROFILE, …); AWS_ENDPOINT_URL_DYNAMODB points it at
another endpoint (DynamoDB Local). Exit codes: 0 done, 1 DynamoDB failed, 2 a usage error, 3 show found nothing.`;

type Given = CommandArgs<typeof RECORD_OPTIONS>;

interface Table {
  client: DynamoDBClient;
  tableName: string;
}

/** What `list` and `stats` read of each record: never its answer, which may be large. */
const SUMMARY = "#pk, #state, #fingerprint, #fence, #lease, #expires, #status";
/**
 * Live records alone: not a released record's marker, nor a part of a stored answer, nor a record past its end that
 * DynamoDB's Time to Live has not deleted yet (it may take days), which the store treats as absent.
 */
const RECORDS = "#state IN (:running, :completed) AND (#expires > :now OR (#state = :running AND #lease > :now))";

async function show({ client, tableName }: Table, { operands, values }: Given): Promise<InspectReport> {
  const id = { scope: String(values.scope), path: String(values.path), key: String(operands[0]) };
  // The answer's parts are read only when it is asked for.
  const record = values.body
    ? await dynamoStore({ client, tableName }).get(id)
    : recordOfItem((await client.send(new GetItemCommand({ TableName: tableName, Key: keyOf(recordKeyOf(id)) }))).Item)
        ?.record;
  const view = record && recordView(recordKeyOf(id), record, Date.now(), values.body);
  return showReport("partitionKey", view, id.key, id.path);
}

/** The records' summaries, a page of the table's scan at a time, until `enough` has them. */
async function summaries({ client, tableName }: Table, enough: (records: RecordView[]) => boolean) {
  const now = Date.now();
  const records: RecordView[] = [];
  const pages = scanPages(client, {
    TableName: tableName,
    ProjectionExpression: SUMMARY,
    FilterExpression: RECORDS,
    ExpressionAttributeNames: namesIn(SUMMARY, RECORDS),
    ExpressionAttributeValues: {
      ":running": str(RecordState.IN_PROGRESS),
      ":completed": str(RecordState.COMPLETED),
      ":now": num(now),
    },
  });
  for await (const items of pages) {
    for (const item of items) {
      const stored = recordOfItem(item);
      if (stored) records.push(recordView(String(item[PARTITION_KEY]?.S), stored.record, now));
    }
    if (enough(records)) break;
  }
  return records;
}

async function list(table: Table, { values }: Given): Promise<InspectReport> {
  const limit = Number(values.limit);
  return listReport("partitionKey", await summaries(table, hasEnoughListed(values.stuck, limit)), {
    stuck: values.stuck,
    limit,
  });
}

async function stats(table: Table): Promise<InspectReport> {
  return statsReport("the table", await summaries(table, () => false));
}

/** How `runDynamoCommand` bounds its requests. */
export interface DynamoCommandOptions {
  /**
   * How long one request to DynamoDB may take, connecting included, before the command gives up on it and exits 1,
   * in ms. Default 10 s: a page of a scan takes well under a second.
   */
  requestTimeoutMs?: number;
}

/** Runs `idemkit-dynamodb` with the process's arguments and environment, and sets its exit code. */
export function runDynamoCommand({ requestTimeoutMs = 10_000 }: DynamoCommandOptions = {}): Promise<void> {
  return runCommandLine({
    name: "idemkit-dynamodb",
    usage: USAGE,
    commands: { show, list, stats },
    options: RECORD_OPTIONS,
    urlVariable: "DYNAMODB_TABLE",
    check: (args) => recordArgsProblem(args, "partition key"),
    async connect(tableName) {
      // On Node 20 the SDK warns, once a process, that its releases from January 2027 need Node 22: nine lines for
      // an app's log, not for a command whose output is one line a script reads. This variable is the SDK's own
      // switch for it (aws/aws-sdk-js-v3#7983), read as a client is made; an operator's own setting is kept.
      process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
      // One attempt, bounded: an endpoint that is unreachable, or takes the connection and never answers, is an
      // answer, not a wait. The SDK's requestTimeout alone only warns: throwOnRequestTimeout makes it end the request.
      const client = new DynamoDBClient({
        maxAttempts: 1,
        requestHandler: {
          connectionTimeout: Math.min(5_000, requestTimeoutMs),
          requestTimeout: requestTimeoutMs,
          throwOnRequestTimeout: true,
        },
      });
      return { client: { client, tableName }, close: async () => client.destroy() };
    },
    failure(error) {
      // The store refuses a table it cannot use with DynamoDB's own error as the cause: said as the commands say it.
      const failed = isIdempotencyError(error) ? error.cause : error;
      const { name, code, message } = failed as { name?: string; code?: string; message?: string };
      const problem = tableProblemOf(failed);
      if (problem === "missing") return `no table named by DYNAMODB_TABLE in this region (${message})`;
      if (problem === "keyed otherwise") {
        return `the table named by DYNAMODB_TABLE is keyed otherwise; the store's has its partition key ${PARTITION_KEY} alone (${message})`;
      }
      if (name === "CredentialsProviderError") return `no AWS credentials: ${message}`;
      if (code === "ECONNREFUSED" || code === "ENOTFOUND" || /connect/i.test(message ?? "")) {
        return `cannot reach DynamoDB (${code ?? name ?? message})`;
      }
      if (name === "TimeoutError") return `DynamoDB did not answer within ${requestTimeoutMs / 1000} s`;
      return `DynamoDB failed: ${name ? `${name}: ` : ""}${message ?? String(error)}`;
    },
  });
}
