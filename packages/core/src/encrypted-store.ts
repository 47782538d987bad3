/**
 * Stored answers kept safe at rest: `encryptedStore(store, { keys, current })` seals each answer's body with
 * AES-256-GCM before the store writes it, and opens it when the store reads it back, on any store (Drizzle, Redis,
 * yours). What the database holds is `idemkit:aes-256-gcm:<key id>:<iv>:<ciphertext>`, bound to its record: the
 * record's scope, path and key are the cipher's additional data, so an answer copied onto another record does not
 * open. Keys rotate by id: new answers are sealed with `current`, and answers sealed with any key still in `keys`
 * open. A record that does not open (its key retired too soon, the data altered, a value that was never sealed) is
 * refused with STORE_MISCONFIGURED: it is never replayed as what it is not, and nothing runs in its place.
 *
 * Statuses, fingerprints and the records' other columns stay readable: operating the store needs them, and they
 * hold no answer.
 */
import { fromBase64, toBase64 } from "./base64.js";
import { IdempotencyError, IdempotencyErrorCode } from "./errors.js";
import type {
  AtomicCapability,
  AtomicSession,
  ClaimResult,
  IdempotencyStore,
  RecordId,
  StoredRecord,
  StoredResponse,
} from "./store.js";

/** The keys stored answers are sealed with. */
export interface AnswerKeys {
  /** The id of the key new answers are sealed with; it must be in `keys`. */
  current: string;
  /**
   * Every key that may have sealed an answer still stored, by id: 32 bytes each, as bytes or base64. Keep a retired
   * key until the answers it sealed have expired and been purged (`idemkit-purge`): an answer whose key is gone is
   * refused, and an expired record is still read until it is purged.
   */
  keys: Readonly<Record<string, Uint8Array | string>>;
}

const PREFIX = "idemkit:aes-256-gcm:";
const IV_BYTES = 12;
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Wraps `store` so that the answers it keeps are encrypted at rest. Everything else it does is unchanged: its mode,
 * its transaction, its other methods.
 *
 *   const store = encryptedStore(drizzleStore({ db }), {
 *     current: "2026-12",
 *     keys: { "2026-12": env.answerKey, "2026-06": env.previousAnswerKey }, // base64 of 32 bytes each
 *   });
 */
export function encryptedStore<TStore extends IdempotencyStore<unknown>>(
  store: TStore,
  answerKeys: AnswerKeys,
): TStore {
  const sealer = sealerOf(answerKeys);
  const opened = async (id: RecordId, record: StoredRecord | undefined): Promise<StoredRecord | undefined> =>
    record?.state === "completed" ? { ...record, response: await sealer.open(id, record.response) } : record;
  const openedClaim = async <T extends ClaimResult | { status: "busy" }>(id: RecordId, result: T): Promise<T> =>
    result.status === "exists" ? { ...result, record: await opened(id, result.record) } : result;

  const atomic = store.atomic && encryptedAtomic(store.atomic, sealer, opened, openedClaim);
  const overrides: Partial<IdempotencyStore<unknown>> = {
    claim: async (request) => openedClaim(request.id, await store.claim(request)),
    complete: async (id, fence, response, expiresAt) =>
      store.complete(id, fence, await sealer.seal(id, response), expiresAt),
    get: async (id) => opened(id, await store.get(id)),
    ...(atomic && { atomic }),
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (Object.hasOwn(overrides, property)) return overrides[property as keyof typeof overrides];
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function encryptedAtomic<Tx>(
  atomic: AtomicCapability<Tx>,
  sealer: Sealer,
  opened: (id: RecordId, record: StoredRecord | undefined) => Promise<StoredRecord | undefined>,
  openedClaim: <T extends ClaimResult | { status: "busy" }>(id: RecordId, result: T) => Promise<T>,
): AtomicCapability<Tx> {
  const peek = atomic.peek?.bind(atomic);
  return {
    ...(atomic.database !== undefined && { database: atomic.database }),
    ...(atomic.waitMs !== undefined && { waitMs: atomic.waitMs }),
    transaction: (work) =>
      atomic.transaction((session) => {
        const sealed: AtomicSession<Tx> = {
          tx: session.tx,
          claim: async (request) => openedClaim(request.id, await session.claim(request)),
          complete: async (id, response, expiresAt, options) =>
            session.complete(id, await sealer.seal(id, response), expiresAt, options),
        };
        return work(sealed);
      }),
    ...(peek && {
      peek: async (id: RecordId) => {
        const { running, record } = await peek(id);
        return { running, record: await opened(id, record) };
      },
    }),
  };
}

interface Sealer {
  seal(id: RecordId, response: StoredResponse): Promise<StoredResponse>;
  open(id: RecordId, response: StoredResponse): Promise<StoredResponse>;
}

/**
 * The refusal of a sealed answer read through a store that was not wrapped with its keys (a second engine, a lookup
 * given the plain store): it is never replayed as the ciphertext it is.
 */
export function sealedWithoutKeys(id: RecordId): IdempotencyError {
  return unreadable(id, "it was sealed by encryptedStore, and this store was not given its keys");
}

/** Whether a stored body is an answer `encryptedStore` sealed: what an inspecting tool shows as sealed. */
export function isSealedBody(body: string): boolean {
  return body.startsWith(PREFIX);
}

function sealerOf({ current, keys }: AnswerKeys): Sealer {
  const raw = new Map<string, Uint8Array>();
  for (const [keyId, key] of Object.entries(keys)) {
    if (!KEY_ID.test(keyId)) {
      throw new TypeError(`encryptedStore(): key id "${keyId}" must be 1 to 64 letters, digits, ".", "_" or "-".`);
    }
    if (typeof key !== "string" && !(key instanceof Uint8Array)) {
      throw new TypeError(`encryptedStore(): key "${keyId}" is missing: give 32 bytes, or their base64.`);
    }
    // A copy: the caller's buffer may change after this.
    const bytes = typeof key === "string" ? bytesOf(key) : new Uint8Array(key);
    if (bytes.length !== 32) {
      throw new TypeError(`encryptedStore(): key "${keyId}" must be 32 bytes (AES-256), not ${bytes.length}.`);
    }
    raw.set(keyId, bytes);
  }
  if (!raw.has(current)) throw new TypeError(`encryptedStore(): the current key "${current}" is not in keys.`);
  const imported = new Map<string, Promise<CryptoKey>>();
  const cryptoKey = (keyId: string) => {
    let key = imported.get(keyId);
    if (!key) {
      key = globalThis.crypto.subtle.importKey("raw", raw.get(keyId) as Uint8Array<ArrayBuffer>, "AES-GCM", false, [
        "encrypt",
        "decrypt",
      ]);
      imported.set(keyId, key);
    }
    return key;
  };
  // The record and the status the answer was stored with: neither can be changed under it.
  const boundTo = (id: RecordId, status: number) =>
    new TextEncoder().encode(JSON.stringify([id.scope, id.path, id.key, status]));

  return {
    async seal(id, response) {
      const iv = globalThis.crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const sealed = await globalThis.crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: boundTo(id, response.status) },
        await cryptoKey(current),
        new TextEncoder().encode(response.body),
      );
      return {
        status: response.status,
        body: `${PREFIX}${current}:${toBase64(iv)}:${toBase64(new Uint8Array(sealed))}`,
      };
    },
    async open(id, response) {
      const [keyId = "", iv = "", sealed = ""] = response.body.startsWith(PREFIX)
        ? response.body.slice(PREFIX.length).split(":")
        : [];
      if (!raw.has(keyId)) {
        throw unreadable(
          id,
          keyId === "" ? "it was not sealed by encryptedStore" : `its key "${keyId}" is not among the keys given`,
        );
      }
      try {
        const body = await globalThis.crypto.subtle.decrypt(
          { name: "AES-GCM", iv: bytesOf(iv), additionalData: boundTo(id, response.status) },
          await cryptoKey(keyId),
          bytesOf(sealed),
        );
        return { status: response.status, body: new TextDecoder().decode(body) };
      } catch (cause) {
        throw unreadable(id, "it does not open with its key (altered, or moved from another record)", cause);
      }
    },
  };
}

function unreadable(id: RecordId, why: string, cause?: unknown): IdempotencyError {
  return new IdempotencyError(
    IdempotencyErrorCode.STORE_MISCONFIGURED,
    `The stored answer of ${id.path} (key ${id.key}) cannot be read: ${why}. It is not replayed, and nothing was ` +
      "run in its place; give encryptedStore the key it was sealed with, or purge the record.",
    cause === undefined ? {} : { cause },
  );
}

/** The bytes of `text`, none when it is not base64: a key of the wrong length, or a sealed answer that does not open. */
function bytesOf(text: string): Uint8Array<ArrayBuffer> {
  try {
    return fromBase64(text);
  } catch {
    return new Uint8Array(0);
  }
}
