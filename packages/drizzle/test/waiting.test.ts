/**
 * Waiting costs no connection (atomic mode). Duplicates of a call running in the same process wait for it in
 * memory; duplicates from another instance learn at once that the key is held and wait outside any transaction,
 * asking between pauses. Either way, an unrelated request on a small pool is served while they wait, and every
 * duplicate replays the one run's answer.
 */
import { createIdempotencyEngine } from "@idemkit/core";
import type { Settlement } from "@idemkit/core/adapter";
import { gate, type NotesDatabase, notesDatabases } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { drizzleStore } from "../src/index.js";

// Two connections: one for the call holding the key, one for everything else.
const databases = notesDatabases(2);

const request = (key: string) => ({ scope: "s", path: "notes.add", key, fingerprint: "fp" });
const DUPLICATES = 10;

/** A procedure that writes a note and answers once the test releases it; `runs` counts its executions. */
function procedureHeldUntilReleased(key: string) {
  const { opened: released, open: release } = gate();
  const { opened: running, open: started } = gate();
  let runs = 0;
  const procedure = async ({ tx }: { tx: unknown }): Promise<Settlement<string>> => {
    runs++;
    await (tx as NotesDatabase["db"]).execute(sql`insert into notes (key) values (${key})`);
    started();
    await released;
    return { value: "placed", response: { status: 200, body: '"placed"' } };
  };
  return { procedure, release, running, runs: () => runs };
}

const quick = async (): Promise<Settlement<string>> => ({ value: "quick", response: { status: 200, body: '"quick"' } });

/** Duplicates of `key` through `engine`, counting those that got an answer. */
function duplicatesOf(
  engine: ReturnType<typeof createIdempotencyEngine>,
  key: string,
  procedure: Parameters<ReturnType<typeof createIdempotencyEngine>["run"]>[1],
) {
  let answered = 0;
  const all = Array.from({ length: DUPLICATES }, () =>
    engine.run(request(key), procedure).finally(() => {
      answered++;
    }),
  );
  return { all: Promise.all(all), answered: () => answered };
}

/** Releases the first call: it answers, every duplicate replays its answer, and it ran once. */
async function expectOneRunReplayed(
  first: ReturnType<typeof procedureHeldUntilReleased>,
  placing: Promise<unknown>,
  duplicates: ReturnType<typeof duplicatesOf>,
) {
  first.release();
  expect(await placing).toEqual({ replayed: false, value: "placed" });
  const answers = await duplicates.all;
  expect(answers).toEqual(Array(DUPLICATES).fill({ replayed: true, response: { status: 200, body: '"placed"' } }));
  expect(first.runs()).toBe(1);
}

describe.each(["postgres.js", "node-postgres", "PGlite"])("duplicates in the same process on %s", (driver) => {
  it("wait for the running call in memory while an unrelated request is served, then replay it", async () => {
    const database = databases[driver as keyof typeof databases];
    const engine = createIdempotencyEngine({ store: drizzleStore({ db: database.db, waitMs: 10_000 }) });
    const key = globalThis.crypto.randomUUID();
    const first = procedureHeldUntilReleased(key);
    const placing = engine.run(request(key), first.procedure);
    await first.running;
    const duplicates = duplicatesOf(engine, key, first.procedure);

    // PGlite has one connection, which the first call holds: there, nothing else can be served meanwhile.
    if (driver !== "PGlite") {
      expect(await engine.run(request(globalThis.crypto.randomUUID()), quick)).toEqual({
        replayed: false,
        value: "quick",
      });
      expect(duplicates.answered()).toBe(0);
    }

    await expectOneRunReplayed(first, placing, duplicates);
  }, 30_000);
});

describe.each(["postgres.js", "node-postgres"])("duplicates from another instance on %s", (driver) => {
  /** Two instances of an app on one database: engines of their own, stores of their own, one pool. */
  function instances(waitMs: number) {
    const database = databases[driver as keyof typeof databases];
    const instance = () =>
      createIdempotencyEngine({ store: drizzleStore({ db: database.db, waitMs }), replayCacheSize: 0 });
    return [instance(), instance()] as const;
  }

  it("learn at once that the key is held and wait without a connection, then replay the answer", async () => {
    const [a, b] = instances(10_000);
    const key = globalThis.crypto.randomUUID();
    const first = procedureHeldUntilReleased(key);
    const placing = a.run(request(key), first.procedure);
    await first.running;
    const duplicates = duplicatesOf(b, key, first.procedure);

    expect(await b.run(request(globalThis.crypto.randomUUID()), quick)).toEqual({ replayed: false, value: "quick" });
    expect(duplicates.answered()).toBe(0);

    await expectOneRunReplayed(first, placing, duplicates);
  }, 30_000);

  it("are answered 409 IN_PROGRESS once waitMs passed while the call still runs, and it still runs once", async () => {
    const [a, b] = instances(300);
    const key = globalThis.crypto.randomUUID();
    const first = procedureHeldUntilReleased(key);
    const placing = a.run(request(key), first.procedure);
    await first.running;
    const codes = await Promise.all(
      Array.from({ length: 3 }, () =>
        b.run(request(key), first.procedure).then(
          () => "answered",
          (error: { code?: string; message?: string }) => (error.code === "IN_PROGRESS" ? error.code : error.message),
        ),
      ),
    );
    expect(codes).toEqual(["IN_PROGRESS", "IN_PROGRESS", "IN_PROGRESS"]);
    first.release();
    await placing;
    expect(await b.run(request(key), first.procedure)).toMatchObject({ replayed: true });
    expect(first.runs()).toBe(1);
  });

  it("claim and run once the call holding the key rolled back, rather than wait out waitMs", async () => {
    const [a, b] = instances(10_000);
    const key = globalThis.crypto.randomUUID();
    const first = procedureHeldUntilReleased(key);
    const failing = a.run(request(key), async (execution) => {
      await first.procedure(execution);
      throw new Error("the first call crashed");
    });
    await first.running;
    const duplicate = b.run(request(key), quick);
    first.release();
    await expect(failing).rejects.toThrow("the first call crashed");
    expect(await duplicate).toEqual({ replayed: false, value: "quick" });
  });
});
