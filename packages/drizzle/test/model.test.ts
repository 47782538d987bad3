/**
 * The contract (DESIGN.md §2) as a small reference model, against the engine and the Drizzle store on real
 * PostgreSQL: fast-check generates sequences of requests (duplicates, other inputs, other users, successes, stored
 * refusals, failures, transient refusals), dead workers that hold a lease (lease mode's crash) and clock jumps past
 * leases and TTLs, and after every step the real answer, the executions and the committed business rows must be
 * the model's. Bounded and seeded here; `npm run test:model` runs it longer with a fresh seed.
 */
import {
  IdempotencyErrorCode,
  IdempotencyMode,
  isIdempotencyError,
  RecordState,
  type StoredRecord,
} from "@idemkit/core";
import { createIdempotencyEngine, type Execution, type IdempotencyEngine } from "@idemkit/core/internal";
import { openPostgres } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { drizzleStore, type TransactionOf } from "../src/index.js";

const LEASE_MS = 30_000;
const TTL_MS = 3_600_000;
const RUNS = Number(process.env.IDEMKIT_MODEL_RUNS ?? 20);
const SEED =
  process.env.IDEMKIT_MODEL_SEED === "random" ? undefined : Number(process.env.IDEMKIT_MODEL_SEED ?? 20261130);

let database: Awaited<ReturnType<typeof openPostgres>>;
beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 4 });
  await database.query("create table model_rows (record text not null)");
});
afterAll(() => database?.close());

type Db = typeof database.db;
type Outcome = "ok" | "refused" | "fails" | "transient";

/** What the model knows: the clock, each record as the contract says it stands, executions and committed rows. */
interface Model {
  mode: IdempotencyMode;
  now: number;
  records: Map<string, StoredRecord>;
  executions: Map<string, number>;
  rows: Map<string, number>;
}

/** The system under test: one engine over the store, its clock, and what really ran. */
interface Real {
  engine: IdempotencyEngine<TransactionOf<Db>>;
  store: ReturnType<typeof drizzleStore<Db>>;
  clock: { now: number };
  executions: Map<string, number>;
  /** Makes the ids of one run its own: the database is shared by every run. */
  run: string;
}

const recordName = (scope: string, key: string) => `${scope}/${key}`;

// The model's own reading of DESIGN.md §2, written apart from the code under test (core's replacement()).

/** The record as the contract sees it at `now`: a record past its TTL (and not held by a live lease) is absent. */
function live(model: Model, name: string): StoredRecord | undefined {
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

class Send implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly scope: string,
    readonly key: string,
    readonly input: number,
    readonly outcome: Outcome,
  ) {}

  check = () => true;

  async run(model: Model, real: Real): Promise<void> {
    const name = recordName(this.scope, this.key);
    const fingerprint = `input-${this.input}`;
    const request = { scope: `${real.run}-${this.scope}`, path: "model.send", key: this.key, fingerprint };
    const marker = `${real.run}/${name}`;
    const work = async ({ tx }: Execution<TransactionOf<Db>>) => {
      const executions = (real.executions.get(name) ?? 0) + 1;
      real.executions.set(name, executions);
      await tx?.execute(sql`insert into model_rows (record) values (${marker})`);
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
    const [row] = await database.query<{ n: number }>("select count(*)::int as n from model_rows where record = $1", [
      marker,
    ]);
    if (model.mode === IdempotencyMode.ATOMIC) expect(row?.n ?? 0).toBe(model.rows.get(name) ?? 0);
  }

  toString(): string {
    return `send(${this.scope}, ${this.key}, input ${this.input}, ${this.outcome})`;
  }
}

/** Lease mode's crash: a worker claims the key and dies before it completes or releases. */
class Crash implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly scope: string,
    readonly key: string,
    readonly input: number,
  ) {}

  check = (model: Readonly<Model>) => model.mode === IdempotencyMode.LEASE;

  async run(model: Model, real: Real): Promise<void> {
    const name = recordName(this.scope, this.key);
    const fingerprint = `input-${this.input}`;
    const now = real.clock.now;
    const id = { scope: `${real.run}-${this.scope}`, path: "model.send", key: this.key };
    const claim = await real.store.claim({
      id,
      fingerprint,
      now,
      leaseExpiresAt: now + LEASE_MS,
      expiresAt: now + TTL_MS,
    });
    const record = live(model, name);
    const claimable = !record || takenOver(model, record, fingerprint);
    expect(claim.status, this.toString()).toBe(claimable ? "claimed" : "exists");
    if (claimable) {
      model.records.set(name, {
        state: RecordState.IN_PROGRESS,
        fingerprint,
        fence: 0,
        leaseExpiresAt: model.now + LEASE_MS,
        expiresAt: model.now + TTL_MS,
      });
    }
  }

  toString(): string {
    return `crash(${this.scope}, ${this.key}, input ${this.input})`;
  }
}

class Advance implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(model: Model, real: Real): Promise<void> {
    model.now += this.ms;
    real.clock.now += this.ms;
  }
  toString(): string {
    return `advance(${this.ms} ms)`;
  }
}

const scope = fc.constantFrom("alice", "bob");
const key = fc.constantFrom("k1", "k2", "k3");
const input = fc.constantFrom(1, 2);
const commands = [
  fc
    .tuple(scope, key, input, fc.constantFrom<Outcome>("ok", "ok", "refused", "fails", "transient"))
    .map(([s, k, i, o]) => new Send(s, k, i, o)),
  fc.tuple(scope, key, input).map(([s, k, i]) => new Crash(s, k, i)),
  fc.constantFrom(1_000, LEASE_MS + 1, TTL_MS + 1).map((ms) => new Advance(ms)),
];

describe.each([IdempotencyMode.ATOMIC, IdempotencyMode.LEASE])("the contract's model, in %s mode", (mode) => {
  it("agrees with the engine and the PostgreSQL store on every generated sequence", async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 25 }), async (sequence) => {
        const clock = { now: Date.UTC(2026, 0, 1) };
        const store = drizzleStore({ db: database.db });
        const setup = () => ({
          model: { mode, now: clock.now, records: new Map(), executions: new Map(), rows: new Map() },
          real: {
            engine: createIdempotencyEngine({
              store,
              mode,
              leaseMs: LEASE_MS,
              ttlMs: TTL_MS,
              // Every replay reads PostgreSQL, not the in-process cache, so the store's own answers are checked.
              replayCacheSize: 0,
              now: () => clock.now,
            }),
            store,
            clock,
            executions: new Map(),
            run: globalThis.crypto.randomUUID(),
          },
        });
        await fc.asyncModelRun(setup, sequence);
      }),
      { numRuns: RUNS, ...(SEED !== undefined && { seed: SEED }) },
    );
  }, 120_000);
});
