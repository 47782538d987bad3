/**
 * How a record is laid out in DynamoDB: one item per record under a digest of its id, its answer inline when it
 * fits in an item and in parts when it does not (DynamoDB's item limit is 400 KB), and the attribute DynamoDB's TTL
 * deletes it by. Everything that reads or writes an item's attributes goes through here.
 */
import { type AttributeValue, type DynamoDBClient, ScanCommand, type ScanCommandInput } from "@aws-sdk/client-dynamodb";
import type { RecordId } from "@idemkit/core";
import { sha256Hex } from "@idemkit/core/internal";
import type { StoredRecord } from "@idemkit/core/store";
import { RecordState } from "@idemkit/core/store";

/** The table's partition key, a string: the record's digest, or a part's. The table has no sort key. */
export const PARTITION_KEY = "pk";
/** The attribute DynamoDB's Time to Live deletes an item by, in seconds since the epoch. */
export const TTL_ATTRIBUTE = "ttl";

/**
 * An item's attributes. Every expression names them through `#name` placeholders, so none collides with
 * DynamoDB's reserved words (`state`, `status` and `ttl` are among them).
 */
export const ATTRIBUTE_NAMES = {
  "#pk": PARTITION_KEY,
  "#state": "state",
  "#fingerprint": "fingerprint",
  "#fence": "fence",
  "#lease": "lease",
  "#expires": "expires",
  "#ttl": TTL_ATTRIBUTE,
  "#status": "status",
  "#body": "body",
  "#parts": "parts",
  "#claim": "claim",
  "#completion": "completion",
} as const;

/**
 * A released record's state. The item stays, holding the fence it had, so the key's next claim gets a greater
 * one; reads treat it as absent.
 */
export const RELEASED = "released";

/**
 * How long DynamoDB keeps an item past its end by the engine's clock, so that hosts whose clocks differ a little
 * never see a record vanish before its time. (DynamoDB deletes expired items within days, never before.)
 */
export const EXPIRY_GRACE_MS = 60_000;

/** The answer's bytes kept inline in the record's item; more goes to parts of this size (items hold 400 KB). */
export const PART_BYTES = 350_000;

/**
 * How long a stored answer's parts outlast their record: DynamoDB's Time to Live deletes items in no set order, up to
 * days after their time, and a record it has not deleted yet must still find its parts.
 */
export const PARTS_OUTLAST_MS = 30 * 86_400_000;

/** At most this many of one call's writes or deletes in flight at once, so that none floods the table's capacity. */
export const CONCURRENT_WRITES = 8;

/** Runs `work` on each of `items`, `CONCURRENT_WRITES` at a time; the results in their order. */
export async function boundedly<T, R>(items: readonly T[], work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += CONCURRENT_WRITES) {
    const batch = items.slice(start, start + CONCURRENT_WRITES);
    results.push(...(await Promise.all(batch.map((item, offset) => work(item, start + offset)))));
  }
  return results;
}

/** An item as the low-level client reads and writes it. */
export type Item = Record<string, AttributeValue>;

/** The key of the item under `partitionKey`, as the API's item calls take it. */
export function keyOf(partitionKey: string): Item {
  return { [PARTITION_KEY]: str(partitionKey) };
}

/**
 * The items a scan finds, a page at a time: a caller that has what it needs stops asking by leaving the loop, and
 * no further page is read.
 */
export async function* scanPages(client: DynamoDBClient, input: ScanCommandInput): AsyncGenerator<Item[]> {
  let startKey: Item | undefined;
  do {
    const page = await client.send(new ScanCommand({ ...input, ExclusiveStartKey: startKey }));
    yield page.Items ?? [];
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

/** The partition key of `id`'s record: a digest, so any scope, path and key fit, and none is readable from it. */
export function recordKeyOf({ scope, path, key }: RecordId): string {
  return sha256Hex(JSON.stringify([scope, path, key]));
}

/** The partition key of one part of the answer stored under `fence`: a stale owner's parts never meet a live one's. */
export function partKeyOf(recordKey: string, fence: number, index: number): string {
  return `${recordKey}#${fence}#${index}`;
}

/** A string as DynamoDB's low-level API takes it. */
export const str = (value: string): AttributeValue => ({ S: value });
/** A number as DynamoDB's low-level API takes it: a decimal string, exact for every safe integer. */
export const num = (value: number): AttributeValue => ({ N: String(value) });

/** When DynamoDB may delete an item that counts until `endsAt` (engine ms): in whole seconds, rounded up. */
export function ttlOf(endsAt: number): AttributeValue {
  return num(Math.ceil((endsAt + EXPIRY_GRACE_MS) / 1000));
}

/** The record an item holds, without its answer's parts (`parts` says how many); undefined for none or a release. */
export function recordOfItem(item: Item | undefined): { record: StoredRecord; parts: number } | undefined {
  const state = item?.state?.S;
  if (!item || (state !== RecordState.IN_PROGRESS && state !== RecordState.COMPLETED)) return undefined;
  const common = {
    fingerprint: item.fingerprint?.S ?? "",
    fence: Number(item.fence?.N),
    expiresAt: Number(item.expires?.N),
  };
  if (state === RecordState.IN_PROGRESS) {
    return { record: { state, ...common, leaseExpiresAt: Number(item.lease?.N) }, parts: 0 };
  }
  const response = { status: Number(item.status?.N), body: item.body?.S ?? "" };
  return { record: { state, ...common, response }, parts: Number(item.parts?.N ?? 0) };
}

/** The fence an item holds, released or not; 0 for none. */
export function fenceOfItem(item: Item | undefined): number {
  return Number(item?.fence?.N ?? 0);
}

/** An answer's body as the parts it is stored in when it does not fit inline; none when it does. */
export function partsOf(body: string): Uint8Array[] {
  const bytes = new TextEncoder().encode(body);
  if (bytes.length <= PART_BYTES) return [];
  const parts: Uint8Array[] = [];
  for (let start = 0; start < bytes.length; start += PART_BYTES) parts.push(bytes.subarray(start, start + PART_BYTES));
  return parts;
}

/** The body the parts make, byte for byte. */
export function bodyOfParts(parts: Uint8Array[]): string {
  const joined = new Uint8Array(parts.reduce((length, part) => length + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return new TextDecoder().decode(joined);
}

/** Whether a write failed its condition: the item is not what the write needed, and nothing was written. */
export function isConditionFailure(error: unknown): error is Error & { Item?: Item } {
  return error instanceof Error && error.name === "ConditionalCheckFailedException";
}

/** The names an expression uses, as DynamoDB refuses a request that defines one it does not use. */
export function namesIn(...expressions: string[]): Record<string, string> {
  const used = new Set(expressions.join(" ").match(/#\w+/g));
  return Object.fromEntries(Object.entries(ATTRIBUTE_NAMES).filter(([name]) => used.has(name)));
}
