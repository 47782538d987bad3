/**
 * Completed records kept in process. A completed record never changes until it expires, so a replay that finds it
 * here costs no database round trip.
 */
import type { RecordId, StoredRecord } from "../store.js";

/** Completed records by id, least recently used first out. */
export class ReplayCache {
  readonly #entries = new Map<string, StoredRecord>();
  constructor(readonly maxEntries: number) {}

  get(id: RecordId, at: number): StoredRecord | undefined {
    const name = cacheKey(id);
    const record = this.#entries.get(name);
    if (!record) return undefined;
    this.#entries.delete(name);
    if (record.expiresAt <= at) return undefined;
    this.#entries.set(name, record);
    return record;
  }

  set(id: RecordId, record: StoredRecord): void {
    if (this.maxEntries <= 0) return;
    const name = cacheKey(id);
    this.#entries.delete(name);
    this.#entries.set(name, record);
    if (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }
}

export function cacheKey({ scope, path, key }: RecordId): string {
  return `${scope}\u0000${path}\u0000${key}`;
}
