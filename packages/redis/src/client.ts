/**
 * The few commands the store sends, over whichever client the app already has: node-redis (`redis`, from
 * `createClient` or `createCluster`) or ioredis (`new Redis`, `new Cluster`). Told apart by their method names;
 * typed by shape, so neither client is a dependency.
 */
import type { Script } from "./scripts.js";

type Reply = Promise<unknown>;

/** node-redis 5 and 6: a client from `createClient()`, or a cluster from `createCluster()`. */
export interface NodeRedisClient {
  /** Runs a loaded script by its SHA-1. */
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Reply;
  /** Runs a script, loading it. */
  eval(script: string, options: { keys: string[]; arguments: string[] }): Reply;
  /** A hash's fields: how a record is read for inspection. */
  hGetAll(key: string): Reply;
}

/** ioredis 5 and 6: `new Redis()`, or `new Cluster()`. */
export interface IoRedisClient {
  /** Runs a loaded script by its SHA-1. */
  evalsha(sha: string, numberOfKeys: number, ...keysAndArguments: string[]): Reply;
  /** Runs a script, loading it. */
  eval(script: string, numberOfKeys: number, ...keysAndArguments: string[]): Reply;
  /** A hash's fields: how a record is read for inspection. */
  hgetall(key: string): Reply;
}

/** A Redis client the store can use: node-redis's or ioredis's, single node or Cluster. */
export type RedisClient = NodeRedisClient | IoRedisClient;

/** What the store needs of a client. */
export interface Commands {
  /** Runs `script` by its SHA1, loading it first when the server does not have it (a restart forgets them). */
  run(script: Script, key: string, args: string[]): Promise<unknown>;
  /** The record's fields, empty when it is absent. */
  fields(key: string): Promise<Record<string, string>>;
  /** The keys matching `pattern` on every node that holds data, `count` at a time. */
  scan(pattern: string, count: number): AsyncIterable<string[]>;
}

/**
 * The prefix the client itself puts before every key (node-redis and ioredis both offer one), which SCAN's pattern
 * and answers do not carry.
 */
function clientKeyPrefix(client: RedisClient): string | undefined {
  const options = (client as { options?: { keyPrefix?: unknown } }).options;
  const prefix = options?.keyPrefix ?? (client as { _keyPrefix?: unknown })._keyPrefix;
  return typeof prefix === "string" && prefix !== "" ? prefix : undefined;
}

export function commandsOf(client: RedisClient): Commands {
  const commands = commandsOfShape(client);
  const keyPrefix = clientKeyPrefix(client);
  if (!keyPrefix) return commands;
  return {
    ...commands,
    async *scan(pattern, count) {
      for await (const keys of commands.scan(globEscaped(keyPrefix) + pattern, count)) {
        yield keys.map((key) => (key.startsWith(keyPrefix) ? key.slice(keyPrefix.length) : key));
      }
    },
  };
}

function commandsOfShape(client: RedisClient): Commands {
  if ("evalSha" in client && typeof client.evalSha === "function") return nodeRedis(client);
  if ("evalsha" in client && typeof client.evalsha === "function") return ioredis(client);
  throw new TypeError(
    "redisStore({ client }) takes a node-redis client (createClient, createCluster) or an ioredis one (new Redis, new Cluster).",
  );
}

/** `text` matched literally in a SCAN pattern. */
export function globEscaped(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
}

/** The fields as strings, whatever the client maps them to (node-redis answers a null-prototype object). */
function asFields(reply: unknown): Record<string, string> {
  if (!reply || typeof reply !== "object") return {};
  return Object.fromEntries(Object.entries(reply).map(([field, value]) => [field, String(value)]));
}

interface NodeRedisScanner {
  scanIterator(options: { MATCH: string; COUNT: number }): AsyncIterable<string[] | string>;
}
interface NodeRedisCluster {
  masters: unknown[];
  nodeClient(node: unknown): NodeRedisScanner | Promise<NodeRedisScanner>;
}

function nodeRedis(client: NodeRedisClient): Commands {
  return {
    async run(script, key, args) {
      const options = { keys: [key], arguments: args };
      try {
        return await client.evalSha(await script.sha(), options);
      } catch (error) {
        if (!isNoScript(error)) throw error;
        return client.eval(script.source, options);
      }
    },
    async fields(key) {
      return asFields(await client.hGetAll(key));
    },
    async *scan(pattern, count) {
      const cluster = client as unknown as Partial<NodeRedisCluster>;
      const nodes: NodeRedisScanner[] = cluster.masters
        ? await Promise.all(cluster.masters.map((master) => (cluster as NodeRedisCluster).nodeClient(master)))
        : [client as unknown as NodeRedisScanner];
      for (const node of nodes) {
        if (typeof node.scanIterator !== "function") {
          throw new TypeError(
            "purgeExpired scans the store's keys, and this client cannot (no scanIterator): Redis's TTL deletes the records by itself.",
          );
        }
        for await (const keys of node.scanIterator({ MATCH: pattern, COUNT: count })) {
          // node-redis 4 yields one key at a time, 5 and later a batch.
          yield Array.isArray(keys) ? keys : [keys];
        }
      }
    },
  };
}

interface IoRedisScanner {
  scan(cursor: string, match: "MATCH", pattern: string, countWord: "COUNT", count: number): Promise<[string, string[]]>;
}

function ioredis(client: IoRedisClient): Commands {
  return {
    async run(script, key, args) {
      try {
        return await client.evalsha(await script.sha(), 1, key, ...args);
      } catch (error) {
        if (!isNoScript(error)) throw error;
        return client.eval(script.source, 1, key, ...args);
      }
    },
    async fields(key) {
      return asFields(await client.hgetall(key));
    },
    async *scan(pattern, count) {
      const cluster = client as unknown as { nodes?: (role: "master") => IoRedisScanner[] };
      const nodes =
        typeof cluster.nodes === "function" ? cluster.nodes("master") : [client as unknown as IoRedisScanner];
      for (const node of nodes) {
        let cursor = "0";
        do {
          const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", count);
          cursor = next;
          if (keys.length > 0) yield keys;
        } while (cursor !== "0");
      }
    },
  };
}
