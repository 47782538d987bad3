/**
 * The table the store keeps its records in: one partition key, on-demand billing, and Time to Live on the `ttl`
 * attribute, so DynamoDB deletes ended records itself. `tableDefinition` is the definition to give your
 * infrastructure tool; `createTable` makes it, for tests and scripts; `tableProblemOf` reads DynamoDB's refusal of a
 * table that is not that one, and `tableRefusalOf` says it to the engine.
 */
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { IdempotencyError, IdempotencyErrorCode } from "@idemkit/core";
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

/**
 * How DynamoDB says that a request's table is not one the store can use, as the store and `idemkit-dynamodb` read it:
 * `missing` when there is no such table (never made, in another region, or not made yet), `keyed otherwise` when its
 * key is not `pk` alone (DynamoDB refuses every item call that names another key). Undefined for any other failure.
 */
export function tableProblemOf(error: unknown): "missing" | "keyed otherwise" | undefined {
  if (!(error instanceof Error)) return undefined;
  if (error.name === "ResourceNotFoundException") return "missing";
  // DynamoDB's ValidationException covers many mistakes; only this one is about the table's key.
  if (error.name === "ValidationException" && /key element does not match the schema/i.test(error.message)) {
    return "keyed otherwise";
  }
  return undefined;
}

/**
 * `error` as the engine should answer it: a table that is missing or keyed otherwise is its operator's to fix, not
 * DynamoDB away, so it is refused as STORE_MISCONFIGURED (a 500 that clients do not retry for nothing, its detail
 * logged once by the engine and never sent), saying what is wrong and how to make the table. Any other error as it is.
 */
export function tableRefusalOf(error: unknown, tableName: string): unknown {
  const problem = tableProblemOf(error);
  if (!problem) return error;
  const said = `${(error as Error).name}: ${(error as Error).message}`;
  const wrong =
    problem === "missing"
      ? `is not there in the client's region (${said})`
      : `is keyed otherwise (${said}); the store needs its partition key ${PARTITION_KEY}, a string, alone`;
  return new IdempotencyError(
    IdempotencyErrorCode.STORE_MISCONFIGURED,
    `dynamoStore: the DynamoDB table ${tableName} ${wrong}. Make the table as tableDefinition says (createTable for a ` +
      "first try; CloudFormation and Terraform samples in the guide to stores), and give dynamoStore its name and the " +
      "client its region.",
    { cause: error },
  );
}

/** What `createTable` does besides making the table. */
export interface CreateTableOptions {
  /**
   * Turn on Time to Live on `ttl`. Default true. Emulators without the `UpdateTimeToLive` call (dynalite) need
   * false; the store treats ended records as absent either way, and `purgeExpired` deletes them.
   */
  timeToLive?: boolean;
  /** How long to wait for the table to be active, in ms. Default 60 seconds. */
  maxWaitMs?: number;
}

/**
 * Makes the store's table, or finds it made, and waits until it is active, so a setup script can run again: for
 * tests, scripts and a first try. A table of that name with another key is refused. In production, define it with
 * your infrastructure tool (the guide to stores has CloudFormation and Terraform samples).
 */
export async function createTable(
  client: DynamoDBClient,
  tableName: string,
  { timeToLive = true, maxWaitMs = 60_000 }: CreateTableOptions = {},
): Promise<void> {
  try {
    await client.send(new CreateTableCommand(tableDefinition(tableName)));
  } catch (error) {
    if (!(error instanceof Error && error.name === "ResourceInUseException")) throw error;
  }
  await untilActive(client, tableName, maxWaitMs);
  if (!timeToLive) return;
  try {
    const { TimeToLiveDescription: ttl } = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
    if (ttl?.TimeToLiveStatus === "ENABLED" || ttl?.TimeToLiveStatus === "ENABLING") {
      if (ttl.AttributeName === TTL_ATTRIBUTE) return;
      // DynamoDB takes one Time to Live attribute per table: on another, the store's records would never go.
      throw new Error(
        `createTable: the table ${tableName} has Time to Live on ${ttl.AttributeName}; the store's records end by ${TTL_ATTRIBUTE}.`,
      );
    }
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      }),
    );
  } catch (error) {
    if (!(error instanceof Error && error.name === "UnknownOperationException")) throw error;
    throw new Error(
      `createTable: the table ${tableName} is made, but this endpoint has no Time to Live (an emulator such as ` +
        "dynalite): pass { timeToLive: false } to createTable there. The store treats ended records as absent either way.",
      { cause: error },
    );
  }
}

/**
 * Asks until the table is active, soon at first (an emulator makes it at once) and then less often (DynamoDB takes
 * seconds), where the SDK's waiter waits a whole second before its second look; refuses a table keyed otherwise.
 */
async function untilActive(client: DynamoDBClient, tableName: string, maxWaitMs: number): Promise<void> {
  const deadline = Date.now() + maxWaitMs;
  for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 2_000)) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const keys = (Table?.KeySchema ?? []).map(({ AttributeName, KeyType }) => `${AttributeName} ${KeyType}`);
    if (keys.join() !== `${PARTITION_KEY} HASH`) {
      throw new Error(
        `createTable: the table ${tableName} exists, keyed by ${keys.join(", ")}; the store needs its partition key ${PARTITION_KEY} alone.`,
      );
    }
    if (Table?.TableStatus === "ACTIVE") return;
    if (Date.now() + delayMs > deadline) {
      throw new Error(`createTable: ${tableName} is still ${Table?.TableStatus} after ${maxWaitMs / 1000} s.`);
    }
    await new Promise((resolve) => setTimeout(resolve, delayMs));
  }
}
