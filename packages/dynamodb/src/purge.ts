/**
 * Purging a table ahead of DynamoDB's TTL: the items past their end by the engine's clock, each deleted by a write
 * conditional on the same test, so a record claimed again meanwhile is left alone. A scan reads (and is billed for)
 * the whole table: DynamoDB's Time to Live is what keeps a table small; this is for tests and a table kept smaller.
 */
import { DeleteItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { RecordState } from "@idemkit/core/store";
import { boundedly, type Item, isConditionFailure, namesIn, num, PARTITION_KEY, scanPages, str } from "./items.js";

/**
 * Past its TTL and not held by a live lease: a record, a released one's marker, or a part of a stored answer
 * (which has no state, and ends with its record).
 */
const PURGEABLE = "#expires <= :now AND (attribute_not_exists(#state) OR #state <> :running OR #lease <= :now)";

/** Deletes what is purgeable at `now`, scanning `batchSize` items a page; returns how many records it deleted. */
export async function purgeExpiredItems(
  client: DynamoDBClient,
  tableName: string,
  now: number,
  batchSize: number,
): Promise<number> {
  const names = namesIn(PURGEABLE);
  const values = { ":now": num(now), ":running": str(RecordState.IN_PROGRESS) };
  let purged = 0;
  const pages = scanPages(client, {
    TableName: tableName,
    // Eventually consistent: each delete checks the item again, and one the scan missed goes next time.
    Limit: batchSize,
    FilterExpression: PURGEABLE,
    ProjectionExpression: "#pk, #state",
    ExpressionAttributeNames: namesIn(PURGEABLE, "#pk, #state"),
    ExpressionAttributeValues: values,
  });
  for await (const items of pages) {
    const deleted = await boundedly(items, async (item) => {
      try {
        await client.send(
          new DeleteItemCommand({
            TableName: tableName,
            Key: { [PARTITION_KEY]: item[PARTITION_KEY] as Item[string] },
            ConditionExpression: PURGEABLE,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: values,
          }),
        );
      } catch (error) {
        if (isConditionFailure(error)) return false;
        throw error;
      }
      const state = item.state?.S;
      return state === RecordState.IN_PROGRESS || state === RecordState.COMPLETED;
    });
    purged += deleted.filter(Boolean).length;
  }
  return purged;
}
