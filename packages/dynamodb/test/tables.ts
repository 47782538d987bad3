/**
 * A throwaway dynalite per test file, and clients of it set up as the store's docs say; each store its own table.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from "@aws-sdk/client-dynamodb";
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

let tables = 0;
/** A new table on `client`, made by the package's own `createTable` (without TTL, which dynalite has not). */
export async function freshTable(client: DynamoDBClient): Promise<string> {
  tables += 1;
  const tableName = `idempotency-${process.pid}-${tables}`;
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
    shared.client?.destroy();
    await shared.server?.stop();
  });
  return shared;
}
