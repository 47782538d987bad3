/**
 * The atomic-mode conformance suite: the contract of `AtomicCapability` written as tests, so a store cannot pass
 * the store suite and still break what atomic mode promises (the procedure's writes and the stored answer commit
 * together or not at all; a duplicate is told the key is held, at once with `peek`, else after a bounded wait). The suite cannot know how
 * a store's transaction writes business rows, so the subject says:
 *
 *   describeAtomicConformance("my store", async () => ({
 *     store: myStore({ db }), storeWithWait: (waitMs) => myStore({ db, waitMs }),
 *     write: (tx, marker) => tx.insert(notes).values({ marker }), count: (marker) => countNotes(marker),
 *     unstorableResponse: { status: 2 ** 40, body: "{}" },
 *   }));
 */
import { afterEach, describe, expect, it } from "vitest";
import type { AtomicCapability, ClaimRequest, IdempotencyStore, StoredResponse } from "../store.js";

/** What `describeAtomicConformance` runs each case against: a store with atomic mode over a real database. */
export interface AtomicConformanceSubject<Tx> {
  /** A store with atomic mode. */
  store: IdempotencyStore<Tx> & { readonly atomic: AtomicCapability<Tx> };
  /** Another store over the same database whose duplicates wait at most `waitMs` for a running call. */
  storeWithWait(waitMs: number): IdempotencyStore<Tx> & { readonly atomic: AtomicCapability<Tx> };
  /** Writes one business row tagged `marker` through the procedure's transaction. */
  write(tx: Tx, marker: string): Promise<unknown>;
  /** Counts the committed business rows tagged `marker`. */
  count(marker: string): Promise<number>;
  /** A response this store cannot store, so that completing with it fails. */
  unstorableResponse: StoredResponse;
  /** Run after each case, to close what the subject opened. */
  cleanup?: () => Promise<void> | void;
}

/** How the atomic suite adapts to its database. */
export interface AtomicConformanceOptions {
  /**
   * True for a database with one connection (PGlite): a second transaction waits for the first to end before it
   * starts, so "busy while the first still runs" cannot happen, and that test is skipped.
   */
  oneConnection?: boolean;
}

const LEASE_MS = 30_000;
const TTL_MS = 86_400_000;
const OK: StoredResponse = { status: 200, body: '{"result":"done"}' };

function claimFor(key: string, now = Date.now()): ClaimRequest {
  return {
    id: { scope: "atomic-suite", path: "notes.add", key },
    fingerprint: "fp",
    now,
    leaseExpiresAt: now + LEASE_MS,
    expiresAt: now + TTL_MS,
  };
}

/** Resolves the returned promise's `open()` callers once `open` is called. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Registers the atomic-mode tests for the store that `subject` creates. */
export function describeAtomicConformance<Tx>(
  name: string,
  subject: () => Promise<AtomicConformanceSubject<Tx>>,
  { oneConnection = false }: AtomicConformanceOptions = {},
): void {
  describe(`atomic conformance: ${name}`, () => {
    let cleanups: Array<() => Promise<void> | void> = [];
    afterEach(async () => {
      for (const cleanup of cleanups) await cleanup();
      cleanups = [];
    });
    async function open(): Promise<AtomicConformanceSubject<Tx>> {
      const opened = await subject();
      if (opened.cleanup) cleanups.push(opened.cleanup);
      return opened;
    }
    const freshKey = () => `atomic-${globalThis.crypto.randomUUID()}`;

    it("commits the procedure's writes together with the stored answer", async () => {
      const { store, write, count } = await open();
      const key = freshKey();
      const claim = claimFor(key);
      await store.atomic.transaction(async (session) => {
        expect(await session.claim(claim)).toMatchObject({ status: "claimed" });
        await write(session.tx, key);
        await session.complete(claim.id, OK, claim.expiresAt, { undoEffects: false });
      });
      expect(await count(key)).toBe(1);
      expect(await store.get(claim.id)).toMatchObject({ state: "completed", response: OK });
    });

    it("rolls everything back, the claim included, when the work throws", async () => {
      const { store, write, count } = await open();
      const key = freshKey();
      const claim = claimFor(key);
      const failed = store.atomic.transaction(async (session) => {
        await session.claim(claim);
        await write(session.tx, key);
        throw new Error("the procedure crashed");
      });
      await expect(failed).rejects.toThrow("the procedure crashed");
      expect(await count(key)).toBe(0);
      expect(await store.get(claim.id)).toBeUndefined();
    });

    it("undoes the procedure's writes but keeps the claim when an error answer is stored", async () => {
      const { store, write, count } = await open();
      const key = freshKey();
      const claim = claimFor(key);
      const refusal: StoredResponse = { status: 404, body: '{"error":"no such product"}' };
      await store.atomic.transaction(async (session) => {
        await session.claim(claim);
        await write(session.tx, key);
        await session.complete(claim.id, refusal, claim.expiresAt, { undoEffects: true });
      });
      expect(await count(key)).toBe(0);
      expect(await store.get(claim.id)).toMatchObject({ state: "completed", response: refusal });
    });

    it("rolls everything back when the answer cannot be stored", async () => {
      const { store, write, count, unstorableResponse } = await open();
      const key = freshKey();
      const claim = claimFor(key);
      const failed = store.atomic.transaction(async (session) => {
        await session.claim(claim);
        await write(session.tx, key);
        await session.complete(claim.id, unstorableResponse, claim.expiresAt, { undoEffects: false });
      });
      await expect(failed).rejects.toThrow();
      expect(await count(key)).toBe(0);
      expect(await store.get(claim.id)).toBeUndefined();
    });

    /** A first call that has claimed `key` and holds it until `finish()`; it stores OK if asked to. */
    async function holding(store: AtomicConformanceSubject<Tx>["store"], key: string, { complete = false } = {}) {
      const claimed = gate();
      const finish = gate();
      const done = store.atomic.transaction(async (session) => {
        await session.claim(claimFor(key));
        claimed.open();
        await finish.opened;
        if (complete) await session.complete(claimFor(key).id, OK, Date.now() + TTL_MS, { undoEffects: false });
      });
      await claimed.opened;
      return {
        finish: () => {
          finish.open();
          return done;
        },
      };
    }

    /** A duplicate's claim while `key` is held: thrown out of its transaction, which a busy claim must roll back. */
    function claimAgain(store: AtomicConformanceSubject<Tx>["store"], key: string) {
      return store.atomic
        .transaction(async (session) => {
          throw await session.claim(claimFor(key));
        })
        .catch((thrown: unknown) => thrown);
    }

    it.skipIf(oneConnection)(
      "with peek: answers a duplicate busy at once while its key is held, and peek says so, then shows the answer",
      async () => {
        const { store } = await open();
        const { peek } = store.atomic;
        if (!peek) return;
        const key = freshKey();
        const first = await holding(store, key, { complete: true });
        expect(await claimAgain(store, key)).toEqual({ status: "busy" });
        expect(await peek.call(store.atomic, claimFor(key).id)).toEqual({ running: true, record: undefined });
        await first.finish();
        expect(await peek.call(store.atomic, claimFor(key).id)).toMatchObject({
          running: false,
          record: { state: "completed", response: OK },
        });
        expect(await claimAgain(store, key)).toMatchObject({ status: "exists", record: { response: OK } });
      },
    );

    it("has a duplicate wait for the call holding its key, then see that call's stored answer", async ({ skip }) => {
      const { store } = await open();
      // A store with peek answers such a duplicate at once instead (above), unless it has one connection only.
      if (store.atomic.peek && !oneConnection) skip();
      const key = freshKey();
      const first = await holding(store, key, { complete: true });
      const duplicate = store.atomic.transaction((session) => session.claim(claimFor(key)));
      await first.finish();
      expect(await duplicate).toMatchObject({ status: "exists", record: { state: "completed", response: OK } });
    });

    it.skipIf(oneConnection)(
      "answers a duplicate busy once its wait limit passes while the first call still runs",
      async ({ skip }) => {
        const { store, storeWithWait } = await open();
        if (store.atomic.peek) skip();
        const key = freshKey();
        const first = await holding(store, key);
        const startedAt = Date.now();
        const duplicate = await claimAgain(storeWithWait(200), key);
        // Only a lower bound, which load cannot break: the duplicate waited before it gave up.
        const waitedMs = Date.now() - startedAt;
        await first.finish();
        expect(duplicate).toEqual({ status: "busy" });
        expect(waitedMs).toBeGreaterThanOrEqual(150);
      },
    );
  });
}
