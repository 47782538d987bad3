/**
 * The Redis store: idemkit's store contract in lease mode over Redis, for apps that already run Redis and keep
 * short-lived keys there, with no table to migrate. Each write is one atomic script (claim, complete, renew,
 * release); a replay is the claim's own answer, one round trip. Records expire by Redis's own TTL.
 *
 * It has no atomic mode: Redis cannot share a transaction with the app's database, so a procedure's database writes
 * and its stored response cannot commit together. Lease mode is what Redis can do: the key is claimed before the
 * procedure runs and the response stored after, with a fenced lease so that a crashed call is taken over once its
 * lease ends, and the late completion of the call presumed dead is refused.
 */

import type { RecordId, StoredResponse } from "@idemkit/core";
import { sha256Hex } from "@idemkit/core/internal";
import type { ClaimRequest, ClaimResult, LeaseStore, StoredRecord } from "@idemkit/core/store";
import { RecordState } from "@idemkit/core/store";
import { commandsOf, globEscaped, type RedisClient } from "./client.js";
import { CLAIM, COMPLETE, PURGE, RELEASE, RENEW } from "./scripts.js";

/** What `redisStore` takes: a connected client, and the prefix its keys share. */
export interface RedisStoreOptions {
  /**
   * The app's Redis client: node-redis (`createClient()`, `createCluster()`) or ioredis (`new Redis()`,
   * `new Cluster()`), connected. Give it a bounded offline queue (node-redis `disableOfflineQueue: true`, ioredis
   * `enableOfflineQueue: false`): a command queued while Redis is away answers only once it is back, and the engine
   * answers 503 after `storeTimeoutMs` meanwhile anyway.
   */
  client: RedisClient;
  /** What every key of the store starts with. Default `idemkit:`. No braces: they would make it the Cluster hash tag. */
  prefix?: string;
}

/**
 * The Redis key of each record: named by a digest of its id, so any scope, path and key fit and none is readable
 * from the key name, and the braces make the whole name the Cluster hash tag.
 */
export function recordKeyOf(prefix: string): (id: RecordId) => string {
  return ({ scope, path, key }) => `${prefix}{${sha256Hex(JSON.stringify([scope, path, key]))}}`;
}

/** The pattern every record's key matches, for SCAN. */
export function recordPattern(prefix: string): string {
  return `${globEscaped(prefix)}{*}`;
}

/** Times go to the scripts in whole ms (Redis expiry takes integers): ends rounded up, never shortened. */
const until = (ms: number) => String(Math.ceil(ms));
const at = (ms: number) => String(Math.floor(ms));

/** The store over Redis, in lease mode (its only one): `idempotency({ store: redisStore({ client }) })`. */
export function redisStore({ client, prefix = "idemkit:" }: RedisStoreOptions): LeaseStore {
  if (/[{}]/.test(prefix)) {
    throw new TypeError(
      `redisStore: the prefix ${JSON.stringify(prefix)} has braces, which would put every record in one Cluster slot.`,
    );
  }
  const commands = commandsOf(client);
  const keyOf = recordKeyOf(prefix);

  return {
    async claim(request: ClaimRequest): Promise<ClaimResult> {
      const reply = (await commands
        .run(CLAIM, keyOf(request.id), [
          request.fingerprint,
          at(request.now),
          until(request.leaseExpiresAt),
          until(request.expiresAt),
        ])
        .catch(explainOutOfMemory)) as unknown[];
      // Replies read as strings and numbers whatever the client maps them to (Buffers, strings for integers).
      const [outcome, ...fields] = reply.map((field) => String(field ?? ""));
      if (outcome === "claimed") return { status: "claimed", fence: Number(fields[0]), takeover: fields[1] === "1" };
      const [state, fingerprint, fence, lease, expires, status, body] = fields;
      const record = recordOf({ state, fingerprint, fence, lease, expires, status, body });
      if (outcome !== "exists" || !record)
        throw new Error(`redisStore: unexpected claim reply ${JSON.stringify(reply)}`);
      return { status: "exists", record };
    },

    async complete(id: RecordId, fence: number, response: StoredResponse, expiresAt: number): Promise<boolean> {
      const args = [String(fence), String(response.status), response.body, until(expiresAt)];
      return done(await commands.run(COMPLETE, keyOf(id), args));
    },

    async release(id: RecordId, fence: number): Promise<boolean> {
      return done(await commands.run(RELEASE, keyOf(id), [String(fence)]));
    },

    async renew(id: RecordId, fence: number, leaseExpiresAt: number): Promise<boolean> {
      return done(await commands.run(RENEW, keyOf(id), [String(fence), until(leaseExpiresAt)]));
    },

    async get(id: RecordId): Promise<StoredRecord | undefined> {
      return recordOf(await commands.fields(keyOf(id)));
    },

    /**
     * Redis deletes records at their TTL by itself; this deletes those already past `now` by the engine's clock
     * (a clock of its own in tests, or purging ahead of Redis), scanning every node, `batchSize` keys at a time.
     */
    async purgeExpired({ now, batchSize = 1_000 }: { now: number; batchSize?: number }): Promise<number> {
      let purged = 0;
      for await (const keys of commands.scan(recordPattern(prefix), batchSize)) {
        const deleted = await Promise.all(keys.map((key) => commands.run(PURGE, key, [at(now)])));
        purged += deleted.filter(done).length;
      }
      return purged;
    },
  };
}

/**
 * Redis over `maxmemory` that can evict nothing refuses a claim with a bare OOM reply: said plainly here, as the
 * engine passes it on to the operator's logs with its 503.
 */
function explainOutOfMemory(error: unknown): never {
  if (error instanceof Error && /\bOOM\b/.test(error.message)) {
    throw new Error(
      "redisStore: Redis is over its maxmemory and could evict nothing (noeviction, or no key it may evict), so it " +
        "refused the claim before writing anything; the call was not run. Give Redis more memory, or purge what it holds.",
      { cause: error },
    );
  }
  throw error;
}

/** Whether a script answered 1 (it acted), as an integer or as the string a client may map it to. */
function done(reply: unknown): boolean {
  return Number(reply) === 1;
}

/** A record from its hash's fields; undefined when there is none. */
export function recordOf(fields: Record<string, string | undefined>): StoredRecord | undefined {
  const { state, fingerprint = "", fence, lease, expires, status, body = "" } = fields;
  if (state === RecordState.IN_PROGRESS) {
    return {
      state,
      fingerprint,
      fence: Number(fence),
      leaseExpiresAt: Number(lease),
      expiresAt: Number(expires),
    };
  }
  if (state === RecordState.COMPLETED) {
    return {
      state,
      fingerprint,
      fence: Number(fence),
      response: { status: Number(status), body },
      expiresAt: Number(expires),
    };
  }
  return undefined;
}
