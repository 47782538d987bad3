/**
 * The store conformance suite: the contract of `IdempotencyStore` written as tests. Every store runs it (memory,
 * PGlite, real PostgreSQL), and a store of your own should too:
 *
 *   describeStoreConformance("my store", async () => ({ store: myStore(), cleanup: () => pool.end() }));
 *
 * Each test gets a fresh store from the factory and uses its own keys, so a factory may share one database.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ClaimResult, IdempotencyStore, RecordId, StoredResponse } from "../store.js";

/** What `describeStoreConformance` runs each case against. */
export interface ConformanceSubject {
  /** A fresh store: each case makes its own keys, so one store may serve them all. */
  store: IdempotencyStore<unknown>;
  /** Run after each case, to close what the subject opened. */
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

/** The fence a claim was given; fails the test when the claim did not win. */
async function fenceOf(claiming: Promise<ClaimResult>): Promise<number> {
  const claimed = await claiming;
  expect(claimed).toMatchObject({ status: "claimed" });
  return claimed.status === "claimed" ? claimed.fence : Number.NaN;
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

    it("claims an absent key with a fence", async () => {
      const store = await open();
      const claimed = await store.claim(claimAt(freshId(), T0));
      expect(claimed).toEqual({ status: "claimed", fence: expect.any(Number), takeover: false });
      expect(claimed.status === "claimed" && Number.isSafeInteger(claimed.fence) && claimed.fence > 0).toBe(true);
    });

    it("answers a second claim with the running record, lease included", async () => {
      const store = await open();
      const id = freshId();
      const fence = await fenceOf(store.claim(claimAt(id, T0)));
      expect(await store.claim(claimAt(id, T0 + 1, "fp-2"))).toEqual({
        status: "exists",
        record: {
          state: "in_progress",
          fingerprint: "fp-1",
          fence,
          leaseExpiresAt: T0 + LEASE_MS,
          expiresAt: T0 + TTL_MS,
        },
      });
    });

    it("stores a response byte for byte and returns it to later claims", async () => {
      const store = await open();
      const id = freshId();
      const fence = await fenceOf(store.claim(claimAt(id, T0)));
      expect(await store.complete(id, fence, RESPONSE, T0 + TTL_MS)).toBe(true);
      const later = await store.claim(claimAt(id, T0 + 5));
      expect(later).toEqual({
        status: "exists",
        record: { state: "completed", fingerprint: "fp-1", fence, response: RESPONSE, expiresAt: T0 + TTL_MS },
      });
      expect(await store.get(id)).toEqual(later.status === "exists" ? later.record : undefined);
    });

    it("refuses to complete or release under a fence it does not hold", async () => {
      const store = await open();
      const id = freshId();
      const fence = await fenceOf(store.claim(claimAt(id, T0)));
      expect(await store.complete(id, fence + 1, RESPONSE, T0 + TTL_MS)).toBe(false);
      expect(await store.release(id, fence - 1)).toBe(false);
      expect(await store.get(id)).toMatchObject({ state: "in_progress", fence });
    });

    it("never releases or overwrites a completed record", async () => {
      const store = await open();
      const id = freshId();
      const fence = await fenceOf(store.claim(claimAt(id, T0)));
      await store.complete(id, fence, RESPONSE, T0 + TTL_MS);
      expect(await store.release(id, fence)).toBe(false);
      expect(await store.complete(id, fence, { status: 500, body: "{}" }, T0 + TTL_MS)).toBe(false);
      expect(await store.get(id)).toMatchObject({ state: "completed", response: RESPONSE });
    });

    it("renews a running lease under its fence, so no claim takes it over while it lasts", async () => {
      const store = await open();
      const id = freshId();
      const fence = await fenceOf(store.claim(claimAt(id, T0)));
      expect(await store.renew(id, fence, T0 + 3 * LEASE_MS)).toBe(true);
      const meanwhile = await store.claim(claimAt(id, T0 + 2 * LEASE_MS));
      expect(meanwhile).toMatchObject({ status: "exists", record: { state: "in_progress", fence } });
      expect(
        meanwhile.status === "exists" && meanwhile.record.state === "in_progress" && meanwhile.record.leaseExpiresAt,
      ).toBe(T0 + 3 * LEASE_MS);
      expect(await store.claim(claimAt(id, T0 + 3 * LEASE_MS))).toMatchObject({ status: "claimed", takeover: true });
    });

    it("refuses to renew under a fence it does not hold, or a completed record", async () => {
      const store = await open();
      const id = freshId();
      const fence = await fenceOf(store.claim(claimAt(id, T0)));
      expect(await store.renew(id, fence + 1, T0 + 2 * LEASE_MS)).toBe(false);
      expect(await store.renew(freshId(), fence, T0 + 2 * LEASE_MS)).toBe(false);
      await store.complete(id, fence, RESPONSE, T0 + TTL_MS);
      expect(await store.renew(id, fence, T0 + 2 * LEASE_MS)).toBe(false);
      expect(await store.get(id)).toMatchObject({ state: "completed" });
    });

    it("lets the next claim run after a release", async () => {
      const store = await open();
      const id = freshId();
      const fence = await fenceOf(store.claim(claimAt(id, T0)));
      expect(await store.release(id, fence)).toBe(true);
      expect(await store.get(id)).toBeUndefined();
      expect(await store.claim(claimAt(id, T0 + 1))).toMatchObject({ status: "claimed", takeover: false });
    });

    it("takes over a lease that ended, and fences out the old owner", async () => {
      const store = await open();
      const id = freshId();
      const old = await fenceOf(store.claim(claimAt(id, T0)));
      expect(await store.claim(claimAt(id, T0 + LEASE_MS - 1))).toMatchObject({ status: "exists" });
      const takeover = await store.claim(claimAt(id, T0 + LEASE_MS));
      expect(takeover).toMatchObject({ status: "claimed", takeover: true });
      const fence = takeover.status === "claimed" ? takeover.fence : Number.NaN;
      expect(fence).toBeGreaterThan(old);
      expect(await store.renew(id, old, T0 + 2 * LEASE_MS)).toBe(false);
      expect(await store.complete(id, old, { status: 200, body: '"stale"' }, T0 + TTL_MS)).toBe(false);
      expect(await store.release(id, old)).toBe(false);
      expect(await store.complete(id, fence, RESPONSE, T0 + TTL_MS)).toBe(true);
      expect(await store.get(id)).toMatchObject({ state: "completed", fence, response: RESPONSE });
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
      const fence = await fenceOf(store.claim(claimAt(id, T0)));
      await store.complete(id, fence, RESPONSE, T0 + TTL_MS);
      expect(await store.claim(claimAt(id, T0 + TTL_MS, "fp-2"))).toMatchObject({ status: "claimed", takeover: false });
      expect(await store.get(id)).toMatchObject({ state: "in_progress", fingerprint: "fp-2" });
    });

    it("keeps scopes apart: the same path and key in another scope is another record", async () => {
      const store = await open();
      const id = freshId("user-a");
      const other = { ...id, scope: "user-b" };
      await store.complete(id, await fenceOf(store.claim(claimAt(id, T0))), RESPONSE, T0 + TTL_MS);
      expect(await store.claim(claimAt(other, T0, "fp-2"))).toMatchObject({ status: "claimed" });
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
        await store.complete(id, await fenceOf(store.claim(claimAt(id, T0))), RESPONSE, T0 + 1_000);
      }
      const live = freshId(scope);
      await store.complete(live, await fenceOf(store.claim(claimAt(live, T0))), RESPONSE, T0 + TTL_MS);
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

    it("gives every claim of a key a greater fence: after a takeover, a release, an expiry, and a purge", async () => {
      const store = await open();
      const id = freshId();
      const fences = [await fenceOf(store.claim(claimAt(id, T0)))];
      // A takeover once the lease ended.
      fences.push(await fenceOf(store.claim(claimAt(id, T0 + LEASE_MS))));
      // A release deletes the record.
      expect(await store.release(id, fences[1] as number)).toBe(true);
      fences.push(await fenceOf(store.claim(claimAt(id, T0 + LEASE_MS + 1))));
      // A completed record past its TTL is replaced.
      await store.complete(id, fences[2] as number, RESPONSE, T0 + LEASE_MS + 2);
      fences.push(await fenceOf(store.claim(claimAt(id, T0 + 2 * LEASE_MS))));
      // A purge deletes an expired record.
      await store.complete(id, fences[3] as number, RESPONSE, T0 + 2 * LEASE_MS + 1);
      expect(await store.purgeExpired({ now: T0 + 3 * LEASE_MS })).toBeGreaterThanOrEqual(1);
      expect(await store.get(id)).toBeUndefined();
      fences.push(await fenceOf(store.claim(claimAt(id, T0 + 3 * LEASE_MS))));
      for (const [i, fence] of fences.entries()) {
        if (i > 0) expect(fence, `claim ${i + 1} of ${fences.join(", ")}`).toBeGreaterThan(fences[i - 1] as number);
      }
    });

    it("refuses an owner presumed dead, with its old fence, on a claim made after its record was released", async () => {
      const store = await open();
      const id = freshId();
      const presumedDead = await fenceOf(store.claim(claimAt(id, T0)));
      const tookOver = await fenceOf(store.claim(claimAt(id, T0 + LEASE_MS)));
      expect(await store.release(id, tookOver)).toBe(true);
      const live = await fenceOf(store.claim(claimAt(id, T0 + LEASE_MS + 1)));
      expect(await store.renew(id, presumedDead, T0 + 5 * LEASE_MS)).toBe(false);
      expect(await store.release(id, presumedDead)).toBe(false);
      expect(await store.complete(id, presumedDead, { status: 200, body: '"stale"' }, T0 + TTL_MS)).toBe(false);
      expect(await store.get(id)).toMatchObject({
        state: "in_progress",
        fence: live,
        leaseExpiresAt: T0 + 2 * LEASE_MS + 1,
      });
      expect(await store.complete(id, live, RESPONSE, T0 + TTL_MS)).toBe(true);
    });

    it("refuses an old fence on a claim made after its record expired and was purged", async () => {
      const store = await open();
      const id = freshId();
      const old = await fenceOf(
        store.claim({ ...claimAt(id, T0), leaseExpiresAt: T0 + LEASE_MS, expiresAt: T0 + LEASE_MS }),
      );
      expect(await store.purgeExpired({ now: T0 + LEASE_MS })).toBeGreaterThanOrEqual(1);
      const fresh = await fenceOf(store.claim(claimAt(id, T0 + LEASE_MS)));
      expect(fresh).toBeGreaterThan(old);
      expect(await store.renew(id, old, T0 + 5 * LEASE_MS)).toBe(false);
      expect(await store.complete(id, old, { status: 200, body: '"stale"' }, T0 + TTL_MS)).toBe(false);
      expect(await store.release(id, old)).toBe(false);
      expect(await store.get(id)).toMatchObject({ state: "in_progress", fence: fresh });
    });
  });
}
