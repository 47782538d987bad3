/**
 * What an app may set and send, on real databases: `Infinity` where the options say "no limit" runs calls on every
 * driver, its statements prepared or not (it was a 503 on every call); an option no store could honour is a
 * TypeError when the endpoint is built; a scope or path no store could keep is a TypeError at once, and nothing runs
 * (it was a retryable 503 on every call, or two scopes kept as one record).
 */
import { createIdempotencyEngine, type IdempotencyStore } from "@idemkit/core";
import type { Settlement } from "@idemkit/core/adapter";
import { type NotesDatabase, notesDatabases } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { drizzleStore } from "../src/index.js";

const databases = notesDatabases(2);

const UNLIMITED = {
  storeTimeoutMs: Number.POSITIVE_INFINITY,
  transactionTimeoutMs: Number.POSITIVE_INFINITY,
  procedureTimeoutMs: Number.POSITIVE_INFINITY,
  maxHoldMs: Number.POSITIVE_INFINITY,
};

/** A procedure that writes one note under `key`, counted in the database, and answers `"ok"`. */
function noteWriter(db: NotesDatabase["db"], key: string) {
  return async ({ tx }: { tx: unknown }): Promise<Settlement<string>> => {
    await ((tx ?? db) as NotesDatabase["db"]).execute(sql`insert into notes (key) values (${key})`);
    return { value: "ok", response: { status: 200, body: '"ok"' } };
  };
}

async function notesUnder(database: NotesDatabase, key: string): Promise<number> {
  const [row] = await database.query<{ n: number }>("select count(*)::int as n from notes where key = $1", [key]);
  return row?.n ?? 0;
}

/** Runs one call twice in `mode` with every bound off: the first runs, the second replays, one note is kept. */
async function expectOnceUnlimited(
  database: NotesDatabase,
  store: IdempotencyStore<unknown>,
  mode: "atomic" | "lease",
) {
  const key = globalThis.crypto.randomUUID();
  const engine = createIdempotencyEngine({ store, mode, ...UNLIMITED });
  const request = { scope: "s", path: "notes.add", key, fingerprint: "fp" };
  expect(await engine.run(request, noteWriter(database.db, key))).toMatchObject({ replayed: false, value: "ok" });
  expect(await engine.run(request, noteWriter(database.db, key))).toMatchObject({ replayed: true });
  expect(await notesUnder(database, key)).toBe(1);
}

describe.each(["postgres.js", "node-postgres", "PGlite"] as const)("Infinity as no limit on %s", (driver) => {
  it.each(["atomic", "lease"] as const)("runs a call once and replays it in %s mode", async (mode) => {
    const database = databases[driver];
    await expectOnceUnlimited(database, drizzleStore({ db: database.db }) as IdempotencyStore<unknown>, mode);
  });
});

describe("identities no store could keep", () => {
  const store = () => drizzleStore({ db: databases["postgres.js"].db }) as IdempotencyStore<unknown>;

  it("keeps the longest scope and path allowed, in multibyte characters, with the longest key", async () => {
    const database = databases["postgres.js"];
    const engine = createIdempotencyEngine({ store: store() });
    const key = "k".repeat(255);
    const request = { scope: "é".repeat(512), path: "ü".repeat(512), key, fingerprint: "fp" };
    expect(await engine.run(request, noteWriter(database.db, key))).toMatchObject({ replayed: false });
    expect(await engine.run(request, noteWriter(database.db, key))).toMatchObject({ replayed: true });
  });

  it.each([
    ["a scope past 1,024 bytes", { scope: "é".repeat(513), path: "notes.add" }],
    ["a path past 1,024 bytes", { scope: "s", path: "p".repeat(1_025) }],
    ["a scope with a lone surrogate", { scope: "a\ud800b", path: "notes.add" }],
    ["a path with U+0000", { scope: "s", path: "notes\u0000add" }],
  ])("refuses %s with a TypeError at once, and nothing runs", async (_, identity) => {
    const database = databases["postgres.js"];
    const key = globalThis.crypto.randomUUID();
    const engine = createIdempotencyEngine({ store: store() });
    const outcome = engine.run({ ...identity, key, fingerprint: "fp" }, noteWriter(database.db, key));
    await expect(outcome).rejects.toThrow(TypeError);
    expect(await notesUnder(database, key)).toBe(0);
  });

  it("never keeps two scopes that differ only in lone surrogates as one record", async () => {
    const engine = createIdempotencyEngine({ store: store() });
    const key = globalThis.crypto.randomUUID();
    const writer = noteWriter(databases["postgres.js"].db, key);
    for (const scope of ["a\ud800b", "a\udfffb"]) {
      await expect(engine.run({ scope, path: "notes.add", key, fingerprint: "fp" }, writer)).rejects.toThrow(
        /lone UTF-16 surrogate/,
      );
    }
  });
});

describe("statements sent unprepared (postgres.js with prepare: false)", () => {
  it.each(["atomic", "lease"] as const)("run a call once with every bound off in %s mode", async (mode) => {
    const database = databases["postgres.js"];
    const client = postgres((database as NotesDatabase & { url: string }).url, {
      max: 2,
      prepare: false,
      onnotice: () => {},
    });
    try {
      await expectOnceUnlimited(database, drizzleStore({ db: drizzle(client) }) as IdempotencyStore<unknown>, mode);
    } finally {
      await client.end({ timeout: 5 });
    }
  });
});
