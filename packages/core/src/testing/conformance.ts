/**
 * The store conformance suite: the contract of `IdempotencyStore` written as tests. Every store runs it (memory,
 * PGlite, real PostgreSQL), and a store of your own should too:
 *
 *   describeStoreConformance("my store", async () => ({ store: myStore(), cleanup: () => pool.end() }));
 *
 * Each test gets a fresh store from the factory and uses its own keys, so a factory may share one database.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { IdempotencyStore, RecordId, StoredResponse } from "../store.js";

export interface ConformanceSubject {
  store: IdempotencyStore<unknown>;
  cleanup?: () => Promise<void> | void;
}

const T0 = Date.UTC(2026, 0, 1);
const LEASE_MS = 30_000;
const TTL_MS = 86_400_000;

let sequence = 0;
/** A record id no other test (or earlier run on the same database) has used. */
function freshId(scope = "user-a"): RecordId {
  sequence += 1;
  return { scope, path: "orders.place", key: `${globalThis.crypto.randomUUID()}-${sequence}` };
}

function claimAt(id: RecordId, now: number, fingerprint = "fp-1") {
  return { id, fingerprint, now, leaseExpiresAt: now + LEASE_MS, expiresAt: now + TTL_MS };
}

const RESPONSE: StoredResponse = {
  status: 200,
  body: '{"json":{"orderId":"ö-1","note":"quotes \\" and \\\\ and emoji 🧾","n":1.5e300}}',
};

/** Registers the conformance tests for the store that `subject` creates. */
export function describeStoreConformance(name: string, subject: () => Promise<ConformanceSubject>): void {
  describe(`store conformance: ${name}`, () => {
    let cleanups: Array<() => Promise<void> | void> = [];
    afterEach(async () => {
      for (const cleanup of cleanups) await cleanup();
      cleanups = [];
    });
    async function open(): Promise<IdempotencyStore<unknown>> {
      const { store, cleanup } = await subject();
      if (cleanup) cleanups.push(cleanup);
      return store;
    }

    it("claims an absent key with the first fence", async () => {
      const store = await open();
      expect(await store.claim(claimAt(freshId(), T0))).toEqual({ status: "claimed", fence: 1, takeover: false });
    });

    it("answers a second claim with the running record, lease included", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      expect(await store.claim(claimAt(id, T0 + 1, "fp-2"))).toEqual({
        status: "exists",
        record: {
          state: "in_progress",
          fingerprint: "fp-1",
          fence: 1,
          leaseExpiresAt: T0 + LEASE_MS,
          expiresAt: T0 + TTL_MS,
        },
      });
    });

    it("stores a response byte for byte and returns it to later claims", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      expect(await store.complete(id, 1, RESPONSE, T0 + TTL_MS)).toBe(true);
      const later = await store.claim(claimAt(id, T0 + 5));
      expect(later).toEqual({
        status: "exists",
        record: { state: "completed", fingerprint: "fp-1", fence: 1, response: RESPONSE, expiresAt: T0 + TTL_MS },
      });
      expect(await store.get(id)).toEqual(later.status === "exists" ? later.record : undefined);
    });

    it("refuses to complete or release under a fence it does not hold", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      expect(await store.complete(id, 2, RESPONSE, T0 + TTL_MS)).toBe(false);
      expect(await store.release(id, 2)).toBe(false);
      expect(await store.get(id)).toMatchObject({ state: "in_progress", fence: 1 });
    });

    it("never releases or overwrites a completed record", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      await store.complete(id, 1, RESPONSE, T0 + TTL_MS);
      expect(await store.release(id, 1)).toBe(false);
      expect(await store.complete(id, 1, { status: 500, body: "{}" }, T0 + TTL_MS)).toBe(false);
      expect(await store.get(id)).toMatchObject({ state: "completed", response: RESPONSE });
    });

    it("renews a running lease under its fence, so no claim takes it over while it lasts", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      expect(await store.renew(id, 1, T0 + 3 * LEASE_MS)).toBe(true);
      const meanwhile = await store.claim(claimAt(id, T0 + 2 * LEASE_MS));
      expect(meanwhile).toMatchObject({ status: "exists", record: { state: "in_progress", fence: 1 } });
      expect(
        meanwhile.status === "exists" && meanwhile.record.state === "in_progress" && meanwhile.record.leaseExpiresAt,
      ).toBe(T0 + 3 * LEASE_MS);
      expect(await store.claim(claimAt(id, T0 + 3 * LEASE_MS))).toEqual({
        status: "claimed",
        fence: 2,
        takeover: true,
      });
    });

    it("refuses to renew under a fence it does not hold, or a completed record", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      expect(await store.renew(id, 2, T0 + 2 * LEASE_MS)).toBe(false);
      expect(await store.renew(freshId(), 1, T0 + 2 * LEASE_MS)).toBe(false);
      await store.complete(id, 1, RESPONSE, T0 + TTL_MS);
      expect(await store.renew(id, 1, T0 + 2 * LEASE_MS)).toBe(false);
      expect(await store.get(id)).toMatchObject({ state: "completed" });
    });

    it("lets the next claim run after a release", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      expect(await store.release(id, 1)).toBe(true);
      expect(await store.get(id)).toBeUndefined();
      expect(await store.claim(claimAt(id, T0 + 1))).toMatchObject({ status: "claimed", takeover: false });
    });

    it("takes over a lease that ended, and fences out the old owner", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      expect(await store.claim(claimAt(id, T0 + LEASE_MS - 1))).toMatchObject({ status: "exists" });
      expect(await store.claim(claimAt(id, T0 + LEASE_MS))).toEqual({ status: "claimed", fence: 2, takeover: true });
      expect(await store.complete(id, 1, { status: 200, body: '"stale"' }, T0 + TTL_MS)).toBe(false);
      expect(await store.release(id, 1)).toBe(false);
      expect(await store.complete(id, 2, RESPONSE, T0 + TTL_MS)).toBe(true);
      expect(await store.get(id)).toMatchObject({ state: "completed", fence: 2, response: RESPONSE });
    });

    it("does not hand an ended lease to a request with another fingerprint", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      expect(await store.claim(claimAt(id, T0 + LEASE_MS + 1, "fp-2"))).toMatchObject({
        status: "exists",
        record: { state: "in_progress", fingerprint: "fp-1" },
      });
    });

    it("treats a record past its TTL as absent, whatever its fingerprint", async () => {
      const store = await open();
      const id = freshId();
      await store.claim(claimAt(id, T0));
      await store.complete(id, 1, RESPONSE, T0 + TTL_MS);
      expect(await store.claim(claimAt(id, T0 + TTL_MS, "fp-2"))).toEqual({
        status: "claimed",
        fence: 2,
        takeover: false,
      });
      expect(await store.get(id)).toMatchObject({ state: "in_progress", fingerprint: "fp-2" });
    });

    it("keeps scopes apart: the same path and key in another scope is another record", async () => {
      const store = await open();
      const id = freshId("user-a");
      const other = { ...id, scope: "user-b" };
      await store.claim(claimAt(id, T0));
      await store.complete(id, 1, RESPONSE, T0 + TTL_MS);
      expect(await store.claim(claimAt(other, T0, "fp-2"))).toMatchObject({ status: "claimed", fence: 1 });
      expect(await store.get(id)).toMatchObject({ state: "completed", fingerprint: "fp-1" });
    });

    it("gives a key to exactly one of many concurrent claims", async () => {
      const store = await open();
      const id = freshId();
      const results = await Promise.all(Array.from({ length: 25 }, () => store.claim(claimAt(id, T0))));
      expect(results.filter((result) => result.status === "claimed")).toHaveLength(1);
      expect(results.filter((result) => result.status === "exists")).toHaveLength(24);
    });

    it("purges expired records in batches and leaves live ones and running leases alone", async () => {
      const store = await open();
      const scope = `purge-${globalThis.crypto.randomUUID()}`;
      const expired = Array.from({ length: 5 }, () => freshId(scope));
      for (const id of expired) {
        await store.claim(claimAt(id, T0));
        await store.complete(id, 1, RESPONSE, T0 + 1_000);
      }
      const live = freshId(scope);
      await store.claim(claimAt(live, T0));
      await store.complete(live, 1, RESPONSE, T0 + TTL_MS);
      const running = freshId(scope);
      await store.claim({ ...claimAt(running, T0), expiresAt: T0 + 1_000, leaseExpiresAt: T0 + 10_000 });

      const now = T0 + 5_000;
      expect(await store.purgeExpired({ now, batchSize: 2 })).toBeGreaterThanOrEqual(5);
      for (const id of expired) expect(await store.get(id)).toBeUndefined();
      expect(await store.get(live)).toMatchObject({ state: "completed" });
      expect(await store.get(running)).toMatchObject({ state: "in_progress" });
      expect(await store.purgeExpired({ now: T0 + 10_000 })).toBeGreaterThanOrEqual(1);
      expect(await store.get(running)).toBeUndefined();
    });
  });
}
