/**
 * A throwaway dynalite per test file, and clients of it set up as the store's docs say; each store its own table.
 */
import { DeleteTableCommand, DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
import { type RunningDynamo, startDynamo } from "@idemkit/testkit";
import { afterAll, beforeAll } from "vitest";
import { createTable } from "../src/index.js";

// The SDK warns once per process that its releases from January 2027 need Node 22: known, and noise in test logs.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

export type { RunningDynamo };
export { startDynamo };

/** A client of `endpoint`, with the dummy credentials an emulator takes, and a bounded request. */
export function clientOf(endpoint: string, config: DynamoDBClientConfig = {}): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "idemkit", secretAccessKey: "idemkit" },
    requestHandler: { requestTimeout: 2_000 },
    ...config,
  });
}

/** The tables this process made, to delete from an endpoint that outlives the tests (DYNAMODB_ENDPOINT). */
const made: string[] = [];
/** A new table on `client`, made by the package's own `createTable` (without TTL, which dynalite has not). */
export async function freshTable(client: DynamoDBClient): Promise<string> {
  const tableName = `idempotency-${process.pid}-${made.length + 1}-${Date.now()}`;
  made.push(tableName);
  await createTable(client, tableName, { timeToLive: !!process.env.DYNAMODB_ENDPOINT });
  return tableName;
}

/** What a test file shares: its dynalite, a client of it, and one table. */
export interface FileDynamo {
  server: RunningDynamo;
  client: DynamoDBClient;
  tableName: string;
}

/** Starts a dynalite, a client and a table before the file's tests, and stops them after: read it inside tests. */
export function dynamoForThisFile(): FileDynamo {
  const shared = {} as FileDynamo;
  beforeAll(async () => {
    shared.server = await startDynamo();
    shared.client = clientOf(shared.server.endpoint);
    shared.tableName = await freshTable(shared.client);
  });
  afterAll(async () => {
    if (process.env.DYNAMODB_ENDPOINT) {
      for (const TableName of made.splice(0)) await shared.client.send(new DeleteTableCommand({ TableName }));
    }
    shared.client?.destroy();
    await shared.server?.stop();
  });
  return shared;
}
