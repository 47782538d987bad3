/**
 * The contract (DESIGN.md §2) as a small reference model, run against the engine over a real store: fast-check
 * generates sequences of requests (duplicates, other inputs, other users, successes, stored refusals, failures,
 * transient refusals), workers that claim a key and then stop answering (lease mode's crash or hang), those workers
 * coming back later to renew, release or complete with the fence they were given, and clock jumps past leases and
 * TTLs. After every step the real answer, the executions and (atomic mode) the committed business rows must be the
 * model's. Every store runs it: `describeContractModel("my store", { modes, open })`.
 *
 * Bounded and seeded in `npm test`; `npm run test:model` runs it longer with a fresh seed
 * (IDEMKIT_MODEL_RUNS, IDEMKIT_MODEL_SEED).
 */
import {
  createIdempotencyEngine,
  type IdempotencyEngine,
  IdempotencyErrorCode,
  IdempotencyMode,
  type IdempotencyStore,
  isIdempotencyError,
} from "@idemkit/core";
import type { Execution } from "@idemkit/core/adapter";
import { RecordState, type StoredRecord } from "@idemkit/core/store";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

const LEASE_MS = 30_000;
const TTL_MS = 3_600_000;
const RUNS = Number(process.env.IDEMKIT_MODEL_RUNS ?? 150);
const SEED =
  process.env.IDEMKIT_MODEL_SEED === "random" ? undefined : Number(process.env.IDEMKIT_MODEL_SEED ?? 20261130);

/** The store under test, and (atomic mode) how the procedure writes a business row and how they are counted. */
export interface ModelSubject<Tx> {
  store: IdempotencyStore<Tx>;
  /** Atomic mode: writes one business row tagged `marker` in the procedure's transaction. */
  write?: (tx: Tx, marker: string) => Promise<unknown>;
  /** Atomic mode: how many committed business rows carry `marker`. */
  count?: (marker: string) => Promise<number>;
}

type Outcome = "ok" | "refused" | "fails" | "transient";

/** A worker that claimed a key and stopped answering: what the model knows of it. */
interface Ghost {
  name: string;
  fingerprint: string;
}

/** A record as the contract says it stands, and which worker holds it (none: the engine, which ended its call). */
type ModelRecord = StoredRecord & { holder?: number };

/** What the model knows: the clock, each record, executions, committed rows, and the workers that went quiet. */
interface Model {
  mode: IdempotencyMode;
  now: number;
  records: Map<string, ModelRecord>;
  executions: Map<string, number>;
  rows: Map<string, number>;
  ghosts: Ghost[];
}

/** The system under test: one engine over the store, its clock, what really ran, and each quiet worker's fence. */
interface Real<Tx> {
  engine: IdempotencyEngine<Tx>;
  subject: ModelSubject<Tx>;
  clock: { now: number };
  executions: Map<string, number>;
  fences: number[];
  /** The greatest fence each record was seen to hand out, which every later claim of it must exceed. */
  greatestFence: Map<string, number>;
  /** Makes the ids of one run its own: the database is shared by every run. */
  run: string;
}

const recordName = (scope: string, key: string) => `${scope}/${key}`;
const idOf = (real: Real<unknown>, name: string) => {
  const [scope, key] = name.split("/") as [string, string];
  return { scope: `${real.run}-${scope}`, path: "model.send", key };
};

// The model's own reading of DESIGN.md §2, written apart from the code under test (core's replacement()).

/** The record as the contract sees it at `now`: a record past its TTL (and not held by a live lease) is absent. */
function live(model: Model, name: string): ModelRecord | undefined {
  const record = model.records.get(name);
  if (!record) return undefined;
  const leaseLive = record.state === RecordState.IN_PROGRESS && record.leaseExpiresAt > model.now;
  return record.expiresAt <= model.now && !leaseLive ? undefined : record;
}

/** A crashed call's record whose lease ended is taken over by the same request, never by another input. */
function takenOver(model: Model, record: StoredRecord, fingerprint: string): boolean {
  return (
    record.state === RecordState.IN_PROGRESS && record.leaseExpiresAt <= model.now && record.fingerprint === fingerprint
  );
}

class Send implements fc.AsyncCommand<Model, Real<unknown>> {
  constructor(
    readonly scope: string,
    readonly key: string,
    readonly input: number,
    readonly outcome: Outcome,
  ) {}

  check = () => true;

  async run(model: Model, real: Real<unknown>): Promise<void> {
    const name = recordName(this.scope, this.key);
    const fingerprint = `input-${this.input}`;
    const request = { ...idOf(real, name), fingerprint };
    const marker = `${real.run}/${name}`;
    const work = async ({ tx }: Execution<unknown>) => {
      const executions = (real.executions.get(name) ?? 0) + 1;
      real.executions.set(name, executions);
      if (tx !== undefined) await real.subject.write?.(tx, marker);
      const body = JSON.stringify({ input: this.input, execution: executions });
      if (this.outcome === "fails") throw new Error("the procedure failed");
      if (this.outcome === "transient") return { value: "transient", response: undefined };
      return { value: body, response: { status: this.outcome === "ok" ? 200 : 404, body } };
    };
    const answer = await real.engine.run(request, work).then(
      (result) => (result.replayed ? { replayed: result.response } : { ran: result.value }),
      (error: unknown) => ({ refused: isIdempotencyError(error) ? error.code : String(error) }),
    );

    // What the contract says.
    const record = live(model, name);
    const ran = () => {
      const executions = (model.executions.get(name) ?? 0) + 1;
      model.executions.set(name, executions);
      const body = JSON.stringify({ input: this.input, execution: executions });
      if (this.outcome === "ok" && model.mode === IdempotencyMode.ATOMIC) {
        model.rows.set(name, (model.rows.get(name) ?? 0) + 1);
      }
      if (this.outcome === "ok" || this.outcome === "refused") {
        model.records.set(name, {
          state: RecordState.COMPLETED,
          fingerprint,
          fence: 0,
          response: { status: this.outcome === "ok" ? 200 : 404, body },
          expiresAt: model.now + TTL_MS,
        });
        return { ran: body };
      }
      model.records.delete(name);
      return this.outcome === "fails" ? { refused: "Error: the procedure failed" } : { ran: "transient" };
    };
    let expected: unknown;
    if (!record || takenOver(model, record, fingerprint)) expected = ran();
    else if (record.fingerprint !== fingerprint) expected = { refused: IdempotencyErrorCode.FINGERPRINT_MISMATCH };
    else if (record.state === RecordState.COMPLETED) expected = { replayed: record.response };
    else expected = { refused: IdempotencyErrorCode.IN_PROGRESS };

    expect(answer, this.toString()).toEqual(expected);
    expect(real.executions.get(name) ?? 0).toBe(model.executions.get(name) ?? 0);
    if (model.mode === IdempotencyMode.ATOMIC && real.subject.count) {
      expect(await real.subject.count(marker)).toBe(model.rows.get(name) ?? 0);
    }
  }

  toString(): string {
    return `send(${this.scope}, ${this.key}, input ${this.input}, ${this.outcome})`;
  }
}

/** Lease mode's crash or hang: a worker claims the key and stops answering before it completes or releases. */
class GoQuiet implements fc.AsyncCommand<Model, Real<unknown>> {
  constructor(
    readonly scope: string,
    readonly key: string,
    readonly input: number,
  ) {}

  check = (model: Readonly<Model>) => model.mode === IdempotencyMode.LEASE;

  async run(model: Model, real: Real<unknown>): Promise<void> {
    const name = recordName(this.scope, this.key);
    const fingerprint = `input-${this.input}`;
    const now = real.clock.now;
    const claim = await real.subject.store.claim({
      id: idOf(real, name),
      fingerprint,
      now,
      leaseExpiresAt: now + LEASE_MS,
      expiresAt: now + TTL_MS,
    });
    const record = live(model, name);
    const claimable = !record || takenOver(model, record, fingerprint);
    expect(claim.status, this.toString()).toBe(claimable ? "claimed" : "exists");
    if (!claimable || claim.status !== "claimed") return;
    const before = real.greatestFence.get(name) ?? 0;
    expect(claim.fence, `${this.toString()}: a fence it had before`).toBeGreaterThan(before);
    real.greatestFence.set(name, claim.fence);
    model.records.set(name, {
      state: RecordState.IN_PROGRESS,
      fingerprint,
      fence: 0,
      leaseExpiresAt: model.now + LEASE_MS,
      expiresAt: model.now + TTL_MS,
      holder: model.ghosts.length,
    });
    model.ghosts.push({ name, fingerprint });
    real.fences.push(claim.fence);
  }

  toString(): string {
    return `goQuiet(${this.scope}, ${this.key}, input ${this.input})`;
  }
}

/**
 * A quiet worker comes back and acts with the fence it was given, as if nothing had happened meanwhile: it renews,
 * releases or completes. The store lets it only while the record is still its own claim (no takeover, no release,
 * no new claim after a purge or an expiry): any later claim of the key carries another fence.
 */
class ComeBack implements fc.AsyncCommand<Model, Real<unknown>> {
  constructor(
    readonly pick: number,
    readonly action: "renew" | "release" | "complete",
  ) {}

  check = (model: Readonly<Model>) => model.ghosts.length > 0;

  async run(model: Model, real: Real<unknown>): Promise<void> {
    const worker = this.pick % model.ghosts.length;
    const { name } = model.ghosts[worker] as Ghost;
    const fence = real.fences[worker] as number;
    const id = idOf(real, name);
    const { store } = real.subject;
    const now = real.clock.now;
    const body = JSON.stringify({ worker });
    const acted =
      this.action === "renew"
        ? await store.renew(id, fence, now + LEASE_MS)
        : this.action === "release"
          ? await store.release(id, fence)
          : await store.complete(id, fence, { status: 200, body }, now + TTL_MS);

    const record = model.records.get(name);
    const own = record?.state === RecordState.IN_PROGRESS && record.holder === worker;
    expect(acted, this.toString()).toBe(own);
    if (!own) return;
    if (this.action === "renew") model.records.set(name, { ...record, leaseExpiresAt: model.now + LEASE_MS });
    else if (this.action === "release") model.records.delete(name);
    else {
      const { fingerprint } = record;
      const response = { status: 200, body };
      model.records.set(name, {
        state: RecordState.COMPLETED,
        fingerprint,
        fence: 0,
        response,
        expiresAt: now + TTL_MS,
      });
    }
  }

  toString(): string {
    return `comeBack(worker ${this.pick}, ${this.action})`;
  }
}

/** Purge, as an operator's job runs it: what it deletes is gone, and a later claim is a new one. */
class Purge implements fc.AsyncCommand<Model, Real<unknown>> {
  check = () => true;
  async run(model: Model, real: Real<unknown>): Promise<void> {
    await real.subject.store.purgeExpired({ now: real.clock.now });
    for (const name of [...model.records.keys()]) {
      if (!live(model, name)) model.records.delete(name);
    }
  }
  toString(): string {
    return "purge()";
  }
}

class Advance implements fc.AsyncCommand<Model, Real<unknown>> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, real: Real<unknown>): Promise<void> {
    model.now += this.ms;
    real.clock.now += this.ms;
  }
  toString(): string {
    return `advance(${this.ms} ms)`;
  }
}

const scope = fc.constantFrom("alice", "bob");
const key = fc.constantFrom("k1", "k2");
const input = fc.constantFrom(1, 2);
const send = fc
  .tuple(scope, key, input, fc.constantFrom<Outcome>("ok", "ok", "refused", "fails", "transient"))
  .map(([s, k, i, o]) => new Send(s, k, i, o));
const goQuiet = fc.tuple(scope, key, input).map(([s, k, i]) => new GoQuiet(s, k, i));
const comeBack = fc
  .tuple(fc.nat(3), fc.constantFrom<ComeBack["action"]>("renew", "release", "complete"))
  .map(([pick, action]) => new ComeBack(pick, action));
// Repeated entries weigh more: quiet workers and their return are what lease mode can get wrong.
const commands = [
  send,
  send,
  goQuiet,
  goQuiet,
  comeBack,
  comeBack,
  fc.constant(new Purge()),
  fc.constantFrom(1_000, LEASE_MS + 1, TTL_MS + 1).map((ms) => new Advance(ms)),
];

/**
 * Registers the model test of `name` in each of `modes`. `open` gives the store (and, for atomic mode, how business
 * rows are written and counted); it is called once per generated sequence, and may share one database.
 */
export function describeContractModel<Tx>(
  name: string,
  { modes, open }: { modes: IdempotencyMode[]; open: () => ModelSubject<Tx> | Promise<ModelSubject<Tx>> },
): void {
  describe.each(modes)(`the contract's model on ${name}, in %s mode`, (mode) => {
    it("agrees with the engine and the store on every generated sequence", async () => {
      await fc.assert(
        fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (sequence) => {
          const clock = { now: Date.UTC(2026, 0, 1) };
          const subject = (await open()) as ModelSubject<unknown>;
          const setup = () => ({
            model: { mode, now: clock.now, records: new Map(), executions: new Map(), rows: new Map(), ghosts: [] },
            real: {
              engine: createIdempotencyEngine({
                store: subject.store,
                mode,
                leaseMs: LEASE_MS,
                ttlMs: TTL_MS,
                // Every replay reads the store, not the in-process cache, so the store's own answers are checked.
                replayCacheSize: 0,
                now: () => clock.now,
              }),
              subject,
              clock,
              executions: new Map(),
              fences: [],
              greatestFence: new Map(),
              run: globalThis.crypto.randomUUID(),
            },
          });
          await fc.asyncModelRun(setup, sequence);
        }),
        { numRuns: RUNS, ...(SEED !== undefined && { seed: SEED }) },
      );
    }, 120_000);
  });
}
