/**
 * The bounds of atomic mode on real databases, on every driver: a request queued for a pool connection waits no
 * longer than `waitMs` (then 503, and it never runs when the connection comes), and a procedure that outlives its
 * transaction (held past `transactionTimeoutMs`) can no longer write through it: nothing of it is kept.
 */
import { createIdempotencyEngine } from "@idemkit/core";
import type { Settlement } from "@idemkit/core/adapter";
import { gate, type NotesDatabase, notesDatabases } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { drizzleStore } from "../src/index.js";

// One connection, so a second request queues for it behind the first.
const databases = notesDatabases(1);

const request = (key: string) => ({ scope: "s", path: "notes.add", key, fingerprint: "fp" });

/**
 * A procedure that writes a note, then waits for the test before it writes another and answers; with
 * `inSavepoint`, both writes go through a savepoint (`tx.transaction`).
 */
function heldProcedure(key: string, { inSavepoint = false } = {}) {
  const { opened: released, open: release } = gate();
  const { opened: written, open: wrote } = gate();
  let runs = 0;
  const writeBoth = async (db: NotesDatabase["db"]) => {
    await db.execute(sql`insert into notes (key) values (${key})`);
    wrote();
    await released;
    await db.execute(sql`insert into notes (key) values (${`${key}-late`})`);
  };
  const procedure = async ({ tx }: { tx: unknown }): Promise<Settlement<string>> => {
    runs++;
    const db = tx as NotesDatabase["db"];
    await (inSavepoint
      ? db.transaction((savepoint) => writeBoth(savepoint as unknown as NotesDatabase["db"]))
      : writeBoth(db));
    return { value: "ok", response: { status: 200, body: '"ok"' } };
  };
  return { procedure, release, written, runs: () => runs };
}

async function notesOf(database: NotesDatabase, key: string): Promise<number> {
  const [row] = await database.query<{ n: number }>("select count(*)::int as n from notes where key like $1", [
    `${key}%`,
  ]);
  return row?.n ?? 0;
}

/** The messages of an error and of its causes (Drizzle wraps a failed query's error). */
function causesOf(error: unknown): string[] {
  const messages: string[] = [];
  for (let current = error; current instanceof Error; current = current.cause) messages.push(current.message);
  return messages;
}

async function codeOf(outcome: Promise<unknown>): Promise<unknown> {
  return outcome.then(
    () => "answered",
    (error: { code?: unknown }) => error.code ?? error,
  );
}

describe.each(["postgres.js", "node-postgres"])("a pool of one connection on %s", (driver) => {
  it("answers a request queued for the connection 503 once waitMs passed, and it never runs later", async () => {
    const database = databases[driver as keyof typeof databases];
    const [key, queuedKey] = [globalThis.crypto.randomUUID(), globalThis.crypto.randomUUID()];
    const engine = createIdempotencyEngine({ store: drizzleStore({ db: database.db, waitMs: 200 }) });
    const first = heldProcedure(key);
    const running = engine.run(request(key), first.procedure);
    await first.written;

    const queued = heldProcedure(queuedKey);
    queued.release();
    const startedAt = performance.now();
    expect(await codeOf(engine.run(request(queuedKey), queued.procedure))).toBe("STORE_UNAVAILABLE");
    const waitedMs = performance.now() - startedAt;
    // waitMs, and no more than a moment past it (the bound a machine under load can still keep).
    expect(waitedMs).toBeGreaterThanOrEqual(190);
    expect(waitedMs).toBeLessThan(200 + 1_000);

    first.release();
    expect(await running).toEqual({ replayed: false, value: "ok" });
    // The queued request got the connection after it was answered: it rolled back without claiming or running.
    expect(await database.query("select 1")).toHaveLength(1);
    expect(queued.runs()).toBe(0);
    expect(await notesOf(database, queuedKey)).toBe(0);
    expect(await engine.run(request(queuedKey), queued.procedure)).toEqual({ replayed: false, value: "ok" });
    expect(queued.runs()).toBe(1);
  });
});

describe.each(["postgres.js", "node-postgres", "PGlite"])("a procedure outliving its transaction on %s", (driver) => {
  it.each([
    ["as soon as it is answered (the driver still rolling back)", false, false],
    ["once the driver has ended the transaction", true, false],
    ["in a savepoint, as soon as it is answered", false, true],
    ["in a savepoint, once the driver has ended the transaction", true, true],
  ])("is answered 503, keeps nothing, and a statement it sends %s is refused", async (_, afterEnd, inSavepoint) => {
    const database = databases[driver as keyof typeof databases];
    const key = globalThis.crypto.randomUUID();
    const engine = createIdempotencyEngine({
      store: drizzleStore({ db: database.db }),
      transactionTimeoutMs: 300,
      replayCacheSize: 0,
    });
    const held = heldProcedure(key, { inSavepoint });
    let lateWrite: unknown;
    const procedure: typeof held.procedure = (execution) =>
      held.procedure(execution).catch((error: unknown) => {
        lateWrite = error;
        throw error;
      });
    expect(await codeOf(engine.run(request(key), procedure))).toBe("STORE_UNAVAILABLE");
    // A read through the database waits for the connection the transaction held, so for its end.
    if (afterEnd) await database.query("select 1");

    held.release();
    await expect.poll(() => lateWrite).toBeInstanceOf(Error);
    // (postgres.js reports a savepoint's refused statement as the failure of its own ROLLBACK TO SAVEPOINT.)
    if (!inSavepoint) expect(causesOf(lateWrite).join(" / ")).toMatch(/idempotent transaction is over/);
    expect(await notesOf(database, key)).toBe(0);
    // Nothing was kept of the first attempt, so the retry runs.
    const retry = heldProcedure(`${key}-retry`, { inSavepoint });
    retry.release();
    expect(await engine.run(request(key), retry.procedure)).toEqual({ replayed: false, value: "ok" });
    expect(await notesOf(database, `${key}-retry`)).toBe(2);
  });
});
