/**
 * The DynamoDB store: idemkit's store contract in lease mode over DynamoDB, for apps on AWS (Lambda, or anything
 * without a database of its own), paid per request, with records that DynamoDB's TTL deletes.
 *
 * Each write is one conditional write, so the decision and the write are atomic: a claim inserts the record, or
 * replaces one past its TTL (with no live lease), or takes over one whose lease ended with the same fingerprint,
 * and otherwise fails with the record as it stands (`ReturnValuesOnConditionCheckFailure`). Completion, renewal and
 * release act only while the record carries the caller's fence. Every read that decides something is strongly
 * consistent.
 *
 * Fences. A claim's fence is the engine's clock in microseconds, or one more than the item's own if that is ahead
 * (the write's condition holds it to greater). A release keeps the item, with its fence, as a marker reads treat as
 * absent, so the key's next claim is greater still. Only once DynamoDB's TTL or a purge deleted an item does the
 * clock alone decide, and by then the record ended at least a lease ago: a later claim's fence repeats an older one
 * only on a host whose clock is behind by more than that.
 *
 * It has no atomic mode: DynamoDB cannot share a transaction with the app's database.
 */
import {
  type AttributeValue,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { RecordId, StoredResponse } from "@idemkit/core";
import type { ClaimRequest, ClaimResult, LeaseStore, StoredRecord } from "@idemkit/core/store";
import { RecordState, replacement } from "@idemkit/core/store";
import {
  bodyOfParts,
  boundedly,
  fenceOfItem,
  type Item,
  isConditionFailure,
  keyOf,
  namesIn,
  num,
  PARTITION_KEY,
  PARTS_OUTLAST_MS,
  partKeyOf,
  partsOf,
  RELEASED,
  recordKeyOf,
  recordOfItem,
  str,
  ttlOf,
} from "./items.js";
import { purgeExpiredItems } from "./purge.js";
import { tableRefusalOf } from "./table.js";

/** What `dynamoStore` takes: a client, and the table its records go to. */
export interface DynamoStoreOptions {
  /**
   * The app's `DynamoDBClient` from `@aws-sdk/client-dynamodb` (v3). The engine answers 503 after its
   * `storeTimeoutMs` (5 s) whatever the client does; keep the client's attempts inside it (`maxAttempts: 2` with
   * `requestHandler: { requestTimeout: 1_500, throwOnRequestTimeout: true }`), as a claim the SDK sends again later
   * may still land, and then holds the key until its lease ends. The store does not end a request itself: without
   * `throwOnRequestTimeout` (the SDK only warns at `requestTimeout`) one that is never answered keeps its socket.
   */
  client: DynamoDBClient;
  /** The table, made as `tableDefinition` says (its partition key `pk`, a string; TTL on the `ttl` attribute). */
  tableName: string;
}

/** A claim's write: the record in progress under its fence, owned by the claim's token, with no answer. */
const CLAIM =
  "SET #state = :running, #fingerprint = :fingerprint, #fence = :fence, #lease = :lease, " +
  "#expires = :expires, #ttl = :ttl, #claim = :claim REMOVE #status, #body, #parts, #completion";

/**
 * When a claim may write: no record, a released one, one past its TTL with no live lease, or one whose lease ended
 * with the same fingerprint (`replacement` in `@idemkit/core/store`, as DynamoDB's conditions say it); and only
 * ever with a fence greater than the item's.
 */
const CLAIMABLE =
  "(attribute_not_exists(#pk) OR #state = :released " +
  "OR (#expires <= :now AND (#state = :completed OR #lease <= :now)) " +
  "OR (#state = :running AND #lease <= :now AND #fingerprint = :fingerprint)) " +
  "AND (attribute_not_exists(#fence) OR #fence < :fence)";

/** How often a claim tries again when the item changed between its write and its read (rare: a race lost twice). */
const CLAIM_ATTEMPTS = 5;

/**
 * The store over DynamoDB, in lease mode (its only one):
 * `idempotency({ store: dynamoStore({ client, tableName: "idempotency" }) })`.
 */
export function dynamoStore({ client, tableName }: DynamoStoreOptions): LeaseStore {
  if (!tableName) throw new TypeError("dynamoStore needs the table's name: dynamoStore({ client, tableName }).");

  /** What a request to the table came to; a table the store cannot use said as such (`tableRefusalOf`). */
  function sent<T>(request: Promise<T>): Promise<T> {
    return request.catch((error: unknown) => {
      throw tableRefusalOf(error, tableName);
    });
  }

  /** The item under `partitionKey`, read strongly consistent: what it says decides a claim. */
  async function read(partitionKey: string): Promise<Item | undefined> {
    const { Item: item } = await sent(
      client.send(new GetItemCommand({ TableName: tableName, Key: keyOf(partitionKey), ConsistentRead: true })),
    );
    return item;
  }

  /** The record with its whole answer, its parts read back when it was stored in parts. */
  async function withAnswer(recordKey: string, item: Item | undefined): Promise<StoredRecord | undefined> {
    const stored = recordOfItem(item);
    if (!stored || stored.parts === 0 || stored.record.state !== RecordState.COMPLETED) return stored?.record;
    const { record } = stored;
    const parts = await boundedly(
      Array.from({ length: stored.parts }, (_, index) => index),
      async (index) => {
        const part = (await read(partKeyOf(recordKey, record.fence, index)))?.chunk?.B;
        if (!part) {
          throw new Error(
            `dynamoStore: part ${index + 1} of ${stored.parts} of a stored answer is missing from ${tableName}; was it deleted by hand?`,
          );
        }
        return part;
      },
    );
    return { ...record, response: { ...record.response, body: bodyOfParts(parts) } };
  }

  /**
   * One conditional write that makes `request` the record's owner under `fence`, marked with `claim` (this call's
   * own token), if the record allows it; else the item that stood in the way (from the failed write itself, or read
   * after it where the API cannot say).
   */
  async function claimWrite(
    recordKey: string,
    request: ClaimRequest,
    fence: number,
    claim: string,
  ): Promise<{ won: true; old: Item | undefined } | { won: false; item: Item | undefined }> {
    try {
      const { Attributes: old } = await sent(
        client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: keyOf(recordKey),
            UpdateExpression: CLAIM,
            ConditionExpression: CLAIMABLE,
            ExpressionAttributeNames: namesIn(CLAIM, CLAIMABLE),
            ExpressionAttributeValues: {
              ":running": str(RecordState.IN_PROGRESS),
              ":completed": str(RecordState.COMPLETED),
              ":released": str(RELEASED),
              ":fingerprint": str(request.fingerprint),
              ":fence": num(fence),
              ":lease": num(request.leaseExpiresAt),
              ":expires": num(request.expiresAt),
              ":ttl": ttlOf(Math.max(request.leaseExpiresAt, request.expiresAt)),
              ":now": num(request.now),
              ":claim": str(claim),
            },
            ReturnValues: "ALL_OLD",
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          }),
        ),
      );
      return { won: true, old };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return { won: false, item: error.Item ?? (await read(recordKey)) };
    }
  }

  /**
   * A write conditional on the record being in progress under `fence`; false when it is not, unless `landed` says
   * the item as it stands is this very write's work: the SDK sends a write again when its answer was slow or lost,
   * and the first may have landed.
   */
  async function fencedUpdate(
    id: RecordId,
    fence: number,
    update: string,
    values: Record<string, AttributeValue>,
    { condition = "", landed }: { condition?: string; landed?: (item: Item | undefined) => boolean } = {},
  ): Promise<boolean> {
    const fenced = `#state = :running AND #fence = :fence${condition}`;
    try {
      await sent(
        client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: keyOf(recordKeyOf(id)),
            UpdateExpression: update,
            ConditionExpression: fenced,
            ExpressionAttributeNames: namesIn(update, fenced),
            ExpressionAttributeValues: { ...values, ":running": str(RecordState.IN_PROGRESS), ":fence": num(fence) },
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          }),
        ),
      );
      return true;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return landed ? landed(error.Item ?? (await read(recordKeyOf(id)))) : false;
    }
  }

  return {
    async claim(request: ClaimRequest): Promise<ClaimResult> {
      const recordKey = recordKeyOf(request.id);
      const claim = globalThis.crypto.randomUUID();
      let fence = Math.floor(request.now) * 1000;
      for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
        const written = await claimWrite(recordKey, request, fence, claim);
        if (written.won) {
          const old = recordOfItem(written.old)?.record;
          return { status: "claimed", fence, takeover: old ? (replacement(old, request)?.takeover ?? false) : false };
        }
        // This claim's own write, landed on an attempt whose answer the SDK did not get, then sent again.
        if (written.item?.claim?.S === claim) {
          return { status: "claimed", fence: fenceOfItem(written.item), takeover: false };
        }
        const standing = recordOfItem(written.item)?.record;
        if (standing && !replacement(standing, request)) {
          return { status: "exists", record: (await withAnswer(recordKey, written.item)) as StoredRecord };
        }
        // The record allows the claim and only its fence is ahead of this clock (or it changed since): above it.
        fence = Math.max(fence, fenceOfItem(written.item) + 1);
      }
      throw new Error(
        `dynamoStore: a claim lost the race for its record ${CLAIM_ATTEMPTS} times in a row; the call was not run.`,
      );
    },

    async complete(id: RecordId, fence: number, response: StoredResponse, expiresAt: number): Promise<boolean> {
      const recordKey = recordKeyOf(id);
      const parts = partsOf(response.body);
      // The parts first, under this fence: the record points at them only once the fenced write below succeeds.
      await boundedly(parts, (chunk, index) =>
        sent(
          client.send(
            new PutItemCommand({
              TableName: tableName,
              Item: {
                [PARTITION_KEY]: str(partKeyOf(recordKey, fence, index)),
                chunk: { B: chunk },
                expires: num(expiresAt + PARTS_OUTLAST_MS),
                ttl: ttlOf(expiresAt + PARTS_OUTLAST_MS),
              },
            }),
          ),
        ),
      );
      const answer = parts.length > 0 ? "#parts = :parts" : "#body = :body";
      const completion = globalThis.crypto.randomUUID();
      return fencedUpdate(
        id,
        fence,
        `SET #state = :completed, #status = :status, ${answer}, #expires = :expires, #ttl = :ttl, ` +
          "#completion = :completion REMOVE #lease",
        {
          ":completed": str(RecordState.COMPLETED),
          ":completion": str(completion),
          ":status": num(response.status),
          ...(parts.length > 0 ? { ":parts": num(parts.length) } : { ":body": str(response.body) }),
          ":expires": num(expiresAt),
          ":ttl": ttlOf(expiresAt),
        },
        // Completed by this very write, sent again: not by another completion under the same fence.
        { landed: (item) => item?.completion?.S === completion },
      );
    },

    async release(id: RecordId, fence: number): Promise<boolean> {
      return fencedUpdate(id, fence, "SET #state = :released REMOVE #fingerprint, #lease", {
        ":released": str(RELEASED),
      });
    },

    async renew(id: RecordId, fence: number, leaseExpiresAt: number): Promise<boolean> {
      // The item's TTL already outlasts a lease that ends before the record does; else it moves with the lease.
      const lease = { ":lease": num(leaseExpiresAt) };
      if (await fencedUpdate(id, fence, "SET #lease = :lease", lease, { condition: " AND #expires >= :lease" })) {
        return true;
      }
      return fencedUpdate(id, fence, "SET #lease = :lease, #ttl = :ttl", {
        ...lease,
        ":ttl": ttlOf(leaseExpiresAt),
      });
    },

    async get(id: RecordId): Promise<StoredRecord | undefined> {
      const recordKey = recordKeyOf(id);
      return withAnswer(recordKey, await read(recordKey));
    },

    /**
     * DynamoDB's TTL deletes records by itself, up to days after their end; this deletes those already past `now`
     * by the engine's clock (a test's clock, or a table kept small), scanning `batchSize` items a page.
     */
    purgeExpired({ now, batchSize = 1_000 }: { now: number; batchSize?: number }): Promise<number> {
      return sent(purgeExpiredItems(client, tableName, now, batchSize));
    },
  };
}
