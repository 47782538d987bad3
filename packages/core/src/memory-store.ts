/**
 * An in-process store for unit tests and examples. It keeps the store contract exactly (it passes the same
 * conformance suite as the PostgreSQL store) but forgets everything on restart and is not shared between
 * processes, so it cannot protect a real deployment: use `@idemkit/drizzle` there.
 */
import type { ClaimRequest, ClaimResult, LeaseStore, RecordId, StoredRecord, StoredResponse } from "./store.js";
import { isPurgeable, RecordState, replacement } from "./store.js";

/** Creates an empty in-memory store (lease mode only: it has no transactions to share). */
export function memoryStore(): LeaseStore {
  const records = new Map<string, StoredRecord>();
  /** Fences count claims across the whole store, so a key's next fence is new even after its record was deleted. */
  let lastFence = 0;
  const nameOf = ({ scope, path, key }: RecordId) => `${scope}\u0000${path}\u0000${key}`;

  return {
    async claim({ id, fingerprint, now, leaseExpiresAt, expiresAt }: ClaimRequest): Promise<ClaimResult> {
      const name = nameOf(id);
      const existing = records.get(name);
      const replaced = existing && replacement(existing, { fingerprint, now });
      if (existing && !replaced) return { status: "exists", record: { ...existing } };
      const fence = ++lastFence;
      const takeover = replaced?.takeover ?? false;
      records.set(name, { state: RecordState.IN_PROGRESS, fingerprint, fence, leaseExpiresAt, expiresAt });
      return { status: "claimed", fence, takeover };
    },

    async complete(id: RecordId, fence: number, response: StoredResponse, expiresAt: number): Promise<boolean> {
      const name = nameOf(id);
      const existing = records.get(name);
      if (existing?.state !== RecordState.IN_PROGRESS || existing.fence !== fence) return false;
      records.set(name, {
        state: RecordState.COMPLETED,
        fingerprint: existing.fingerprint,
        fence,
        response: { ...response },
        expiresAt,
      });
      return true;
    },

    async release(id: RecordId, fence: number): Promise<boolean> {
      const name = nameOf(id);
      const existing = records.get(name);
      if (existing?.state !== RecordState.IN_PROGRESS || existing.fence !== fence) return false;
      return records.delete(name);
    },

    async renew(id: RecordId, fence: number, leaseExpiresAt: number): Promise<boolean> {
      const existing = records.get(nameOf(id));
      if (existing?.state !== RecordState.IN_PROGRESS || existing.fence !== fence) return false;
      existing.leaseExpiresAt = leaseExpiresAt;
      return true;
    },

    async get(id: RecordId): Promise<StoredRecord | undefined> {
      const existing = records.get(nameOf(id));
      return existing && { ...existing };
    },

    async purgeExpired({ now }: { now: number; batchSize?: number }): Promise<number> {
      let deleted = 0;
      for (const [name, record] of records) {
        if (!isPurgeable(record, now)) continue;
        records.delete(name);
        deleted++;
      }
      return deleted;
    },
  };
}
