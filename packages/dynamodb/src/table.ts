/**
 * The table the store keeps its records in: one partition key, on-demand billing, and Time to Live on the `ttl`
 * attribute, so DynamoDB deletes ended records itself. `tableDefinition` is the definition to give your
 * infrastructure tool; `createTable` makes it, for tests and scripts.
 */
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { PARTITION_KEY, TTL_ATTRIBUTE } from "./items.js";

/**
 * The table's definition for `CreateTable`: the partition key `pk` (a string) and no sort key, billed per request.
 * Time to Live is set apart (DynamoDB takes it in a call of its own): on the attribute `ttl`.
 */
export function tableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    AttributeDefinitions: [{ AttributeName: PARTITION_KEY, AttributeType: "S" }],
    KeySchema: [{ AttributeName: PARTITION_KEY, KeyType: "HASH" }],
    BillingMode: "PAY_PER_REQUEST",
  };
}

/** What `createTable` does besides making the table. */
export interface CreateTableOptions {
  /**
   * Turn on Time to Live on `ttl`. Default true. Emulators without the `UpdateTimeToLive` call (dynalite) need
   * false; the store treats ended records as absent either way, and `purgeExpired` deletes them.
   */
  timeToLive?: boolean;
  /** How long to wait for the table to be active, in seconds. Default 60. */
  maxWaitS?: number;
}

/**
 * Makes the store's table and waits until it is active: for tests, scripts and a first try. In production, define
 * it with your infrastructure tool (docs/stores.md has CloudFormation, CDK and Terraform samples).
 */
export async function createTable(
  client: DynamoDBClient,
  tableName: string,
  { timeToLive = true, maxWaitS = 60 }: CreateTableOptions = {},
): Promise<void> {
  await client.send(new CreateTableCommand(tableDefinition(tableName)));
  await untilActive(client, tableName, maxWaitS * 1000);
  if (timeToLive) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      }),
    );
  }
}

/**
 * Asks until the table is active, soon at first (an emulator makes it at once) and then less often (DynamoDB takes
 * seconds), the SDK's waiter waiting a whole second before its second look.
 */
async function untilActive(client: DynamoDBClient, tableName: string, maxWaitMs: number): Promise<void> {
  const deadline = Date.now() + maxWaitMs;
  for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 2_000)) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === "ACTIVE") return;
    if (Date.now() + delayMs > deadline) {
      throw new Error(`createTable: ${tableName} is still ${Table?.TableStatus} after ${maxWaitMs / 1000} s.`);
    }
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
}
