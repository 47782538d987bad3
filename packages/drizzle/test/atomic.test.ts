/**
 * The Drizzle store's atomic mode beyond the shared atomic suite (`conformance.test.ts`), on real PostgreSQL and
 * PGlite: the claim statement leaves the transaction's settings as it found them, replacing claims are bounded and
 * keep their savepoint, errors the procedure caught answer its own outcome, and statements that bypass the
 * transaction are caught.
 */
import { createIdempotencyEngine } from "@idemkit/core";
import type { Execution } from "@idemkit/core/adapter";
import { openNodePostgres, openPglite, openPostgres } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle as drizzleNodePostgres } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import pg from "pg";
import postgres from "postgres";
import postgres4 from "postgres4";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { drizzleStore, type TransactionOf } from "../src/index.js";
import { claimFor } from "./claim-request.js";

let server: Awaited<ReturnType<typeof openPostgres>>;
let pglite: Awaited<ReturnType<typeof openPglite>>;
let nodePostgres: Awaited<ReturnType<typeof openNodePostgres>>;
/** The server's database through postgres.js with `prepare: false`: idemkit's statements carry their values as literals. */
let literal: { db: typeof server.db; four: typeof server.db; end(): Promise<unknown> };

beforeAll(async () => {
  [server, pglite, nodePostgres] = await Promise.all([
    openPostgres(inject("postgresUrl"), { max: 4 }),
    openPglite(),
    openNodePostgres(inject("postgresUrl"), { max: 4 }),
  ]);
  for (const database of [server, pglite, nodePostgres]) {
    await database.query("create table notes (id serial primary key, key text not null)");
  }
  const client = postgres(server.url, { max: 4, prepare: false, onnotice: () => {} });
  const four = postgres4(server.url, { max: 4, prepare: false, onnotice: () => {} });
  literal = {
    db: drizzlePostgres(client),
    four: drizzlePostgres(four as never),
    end: () => Promise.all([client.end({ timeout: 5 }), four.end({ timeout: 5 })]),
  };
});
afterAll(async () => {
  await literal?.end();
  await Promise.all([server?.close(), pglite?.close(), nodePostgres?.close()]);
});

/** postgres.js prepared, and with literals, where the savepoint rides in the claim's own text. */
const POSTGRES_JS = [
  ["prepared", () => server.db],
  ["postgres.js 3 with literals", () => literal.db],
  ["postgres.js 4 with literals", () => literal.four],
] as const;

/** The messages of an error and of its causes. */
function causesOf(error: unknown): string[] {
  const messages: string[] = [];
  for (let current = error; current instanceof Error; current = current.cause) messages.push(current.message);
  return messages;
}

function rowsOf(result: unknown): Array<Record<string, unknown>> {
  return Array.isArray(result) ? result : (result as { rows: Array<Record<string, unknown>> }).rows;
}

describe("atomic mode on PostgreSQL", () => {
  it("puts lock_timeout back after the claim, so the procedure's own statements keep the caller's setting", async () => {
    const store = drizzleStore({ db: server.db, waitMs: 1234 });
    const seen = await store.atomic.transaction(async (session) => {
      await session.tx.execute(sql`set local lock_timeout = '7s'`);
      await session.claim(claimFor(globalThis.crypto.randomUUID()));
      return rowsOf(await session.tx.execute(sql`show lock_timeout`))[0]?.lock_timeout;
    });
    expect(seen).toBe("7s");
  });

  it("bounds the rest of the transaction's statements on the server by what is left of its time, without startup parameters", async () => {
    const store = drizzleStore({ db: server.db });
    const settings = (tx: Pick<typeof server.db, "execute">) =>
      tx.execute(sql`select current_setting('statement_timeout') as statement,
        current_setting('idle_in_transaction_session_timeout') as idle`);
    const [bounded] = await store.atomic.transaction(async (session) => {
      await session.claim({ ...claimFor(globalThis.crypto.randomUUID()), holdMs: 1_500.2 });
      return rowsOf(await settings(session.tx));
    });
    expect(bounded).toEqual({ statement: "1501ms", idle: "0" });

    // A shorter bound of the app's own stays; a statement past the bound is ended by PostgreSQL itself.
    const failure = await store.atomic
      .transaction(async (session) => {
        await session.tx.execute(sql`set local statement_timeout = '200ms'`);
        await session.claim({ ...claimFor(globalThis.crypto.randomUUID()), holdMs: 60_000 });
        expect(rowsOf(await settings(session.tx))[0]).toMatchObject({ statement: "200ms" });
        await session.tx.execute(sql`select pg_sleep(5)`);
      })
      .catch((error: unknown) => error);
    expect(causesOf(failure).join(" ")).toMatch(/statement timeout/);

    // Set for the transaction only: the connection's own settings are back once it ends.
    expect(rowsOf(await settings(server.db))[0]).toEqual({ statement: "0", idle: "0" });
  });

  it.each([true, false])(
    "reads its rows on a client that renames columns (postgres.js's transform: postgres.camel), prepare: %s",
    async (prepare) => {
      const client = postgres(server.url, { max: 2, prepare, transform: postgres.camel, onnotice: () => {} });
      try {
        const engine = createIdempotencyEngine({ store: drizzleStore({ db: drizzlePostgres(client) }) });
        const request = { ...claimFor(globalThis.crypto.randomUUID()).id, fingerprint: "fp" };
        const work = async ({ tx }: Execution<TransactionOf<typeof server.db>>) => {
          await tx?.execute(sql`insert into notes (key) values (${request.key})`);
          return { value: "added", response: { status: 201, body: '"added"' } };
        };
        expect(await engine.run(request, work)).toEqual({ replayed: false, value: "added" });
        expect(await engine.run(request, work)).toEqual({ replayed: true, response: { status: 201, body: '"added"' } });
        expect(await server.query("select * from notes where key = $1", [request.key])).toHaveLength(1);
      } finally {
        await client.end({ timeout: 5 });
      }
    },
  );

  it.each(POSTGRES_JS)(
    "keeps a replaced expired record when a 4xx undoes the procedure's writes (%s)",
    async (_, db) => {
      const store = drizzleStore({ db: db() });
      const key = globalThis.crypto.randomUUID();
      const past = Date.now() - 120_000;
      const first = await store.claim(claimFor(key, past));
      const oldFence = first.status === "claimed" ? first.fence : Number.NaN;
      await store.complete(claimFor(key).id, oldFence, { status: 200, body: '"old"' }, past + 1);
      let fence: number | undefined;
      await store.atomic.transaction(async (session) => {
        const claimed = await session.claim(claimFor(key));
        expect(claimed).toMatchObject({ status: "claimed", takeover: false });
        fence = claimed.status === "claimed" ? claimed.fence : undefined;
        expect(fence).toBeGreaterThan(oldFence);
        await session.tx.execute(sql`insert into notes (key) values (${key})`);
        await session.complete(claimFor(key).id, { status: 404, body: '"gone"' }, Date.now() + 60_000, {
          undoEffects: true,
        });
      });
      expect(await store.get(claimFor(key).id)).toMatchObject({
        state: "completed",
        fence,
        response: { body: '"gone"' },
      });
      expect(await server.query("select * from notes where key = $1", [key])).toHaveLength(0);
    },
  );
});

describe.each([
  ["PGlite", () => pglite],
  ["node-postgres", () => nodePostgres],
] as const)("atomic mode on %s", (driver, database) => {
  it("commits the procedure's writes with the stored result, and replays without running again", async () => {
    const { db, query } = database();
    const engine = createIdempotencyEngine({ store: drizzleStore({ db: db as typeof pglite.db }) });
    expect(engine.mode).toBe("atomic");
    const key = `engine-${driver}`;
    const request = { ...claimFor(key).id, fingerprint: "fp" };
    let runs = 0;
    const work = async ({ tx }: Execution<TransactionOf<typeof pglite.db>>) => {
      runs++;
      await tx?.execute(sql`insert into notes (key) values (${key})`);
      return { value: "done", response: { status: 200, body: '"done"' } };
    };
    expect(await engine.run(request, work)).toEqual({ replayed: false, value: "done" });
    expect(await engine.run(request, work)).toEqual({ replayed: true, response: { status: 200, body: '"done"' } });
    expect(runs).toBe(1);
    expect(await query("select * from notes where key = $1", [key])).toHaveLength(1);
  });
});

describe.each([
  ["postgres.js", () => server],
  ["PGlite", () => pglite],
  ["node-postgres", () => nodePostgres],
] as const)("a database error the procedure caught, on %s", (driver, database) => {
  type Tx = TransactionOf<typeof pglite.db>;

  /** Runs a procedure that writes a note, then hits a unique violation on a handle taken before, and catches it. */
  async function runCatching(then: "refuse" | "swallow" | "savepoint") {
    const { db, query } = database();
    await query("create table if not exists handles (name text primary key)");
    await query("insert into handles (name) values ('taken') on conflict do nothing");
    const events: string[] = [];
    const engine = createIdempotencyEngine({
      store: drizzleStore({ db: db as typeof pglite.db }),
      onEvent: (event) => events.push(event.type),
    });
    const key = `caught-${then}-${driver}-${globalThis.crypto.randomUUID()}`;
    const request = { ...claimFor(key).id, fingerprint: "fp" };
    const work = async ({ tx }: Execution<Tx>) => {
      const write = tx as Tx;
      await write.execute(sql`insert into notes (key) values (${key})`);
      const duplicate = sql`insert into handles (name) values ('taken')`;
      const failed = await (then === "savepoint"
        ? write.transaction((savepoint) => savepoint.execute(duplicate))
        : write.execute(duplicate)
      ).then(
        () => false,
        () => true,
      );
      expect(failed).toBe(true);
      return then === "refuse"
        ? { value: "taken", response: { status: 400, body: '{"error":"That handle is taken."}' } }
        : { value: "fine", response: { status: 200, body: '"fine"' } };
    };
    const outcome = await engine.run(request, work).catch((error: unknown) => error);
    const notes = await query("select * from notes where key = $1", [key]);
    const record = await drizzleStore({ db: db as typeof pglite.db }).get(request);
    return { outcome, notes, record, events };
  }

  it("stores the 4xx the procedure answered, with its writes undone", async () => {
    const { outcome, notes, record, events } = await runCatching("refuse");
    expect(outcome).toEqual({ replayed: false, value: "taken" });
    expect(notes).toHaveLength(0);
    expect(record).toMatchObject({ state: "completed", response: { status: 400 } });
    expect(events).toEqual(["executed"]);
  });

  it("fails a procedure that went on in an aborted transaction with an error naming savepoints, not as a store failure", async () => {
    const { outcome, notes, record, events } = await runCatching("swallow");
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toMatch(/tx\.transaction/);
    expect(notes).toHaveLength(0);
    expect(record).toBeUndefined();
    expect(events).toEqual(["released"]);
  });

  it("commits a procedure that ran the statement expected to fail in a savepoint", async () => {
    const { outcome, notes, record, events } = await runCatching("savepoint");
    expect(outcome).toEqual({ replayed: false, value: "fine" });
    expect(notes).toHaveLength(1);
    expect(record).toMatchObject({ state: "completed", response: { status: 200 } });
    expect(events).toEqual(["executed"]);
  });
});

describe("the completing update, sent without waiting for its answer", () => {
  /** Runs one atomic call through `db` and returns where the completion and the commit fell in `statements`. */
  async function order(db: typeof pglite.db, statements: string[], commit: RegExp) {
    const store = drizzleStore({ db });
    const claim = claimFor(globalThis.crypto.randomUUID());
    await store.atomic.transaction(async (session) => {
      await session.claim(claim);
      await session.complete(claim.id, { status: 200, body: "{}" }, Date.now() + 60_000, { undoEffects: false });
    });
    expect(await store.get(claim.id)).toMatchObject({ state: "completed" });
    const completion = statements.findIndex((text) => text.includes("set state = 'completed'"));
    const committed = statements.findIndex((text, index) => index > completion && commit.test(text));
    return { completion, committed };
  }

  it("reaches postgres.js before the COMMIT", async () => {
    const statements: string[] = [];
    const client = postgres(server.url, {
      max: 1,
      onnotice: () => {},
      debug: (_connection, query) => statements.push(query),
    });
    try {
      const { completion, committed } = await order(drizzlePostgres(client) as never, statements, /^commit$/i);
      expect(completion).toBeGreaterThan(-1);
      expect(committed).toBeGreaterThan(completion);
    } finally {
      await client.end();
    }
  });

  it("reaches node-postgres before the COMMIT", async () => {
    const statements: string[] = [];
    const pool = new pg.Pool({ connectionString: nodePostgres.url, max: 1 });
    pool.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: unknown }).query = (...args: unknown[]) => {
        const [first] = args;
        statements.push(typeof first === "string" ? first : String((first as { text?: unknown }).text));
        return query(...args);
      };
    });
    try {
      const { completion, committed } = await order(
        drizzleNodePostgres({ client: pool }) as never,
        statements,
        /^commit$/i,
      );
      expect(completion).toBeGreaterThan(-1);
      expect(committed).toBeGreaterThan(completion);
    } finally {
      await pool.end();
    }
  });

  it("reaches PGlite before its transaction callback returns (PGlite commits then)", async () => {
    const fresh = await openPglite();
    const statements: string[] = [];
    const client = fresh.db.$client;
    const transaction = client.transaction.bind(client);
    client.transaction = (callback) =>
      transaction(async (tx) => {
        const logged = Object.assign(Object.create(tx), {
          query: (text: string, ...rest: never[]) => {
            statements.push(text);
            return tx.query(text, ...rest);
          },
          exec: (text: string, ...rest: never[]) => {
            statements.push(text);
            return tx.exec(text, ...rest);
          },
        });
        const result = await callback(logged);
        statements.push("<callback returned: COMMIT>");
        return result;
      });
    try {
      const { completion, committed } = await order(fresh.db, statements, /COMMIT/);
      expect(completion).toBeGreaterThan(-1);
      expect(committed).toBeGreaterThan(completion);
    } finally {
      await fresh.close();
    }
  });
});

describe("a claim that replaces an expired record", () => {
  /** A completed record for `key` whose TTL ended a minute ago. */
  async function expired(store: ReturnType<typeof drizzleStore>, key: string) {
    const past = Date.now() - 120_000;
    const claimed = await store.claim(claimFor(key, past));
    if (claimed.status !== "claimed") throw new Error("setup: the key was taken");
    await store.complete(claimFor(key).id, claimed.fence, { status: 200, body: "{}" }, past + 60_000);
  }

  /** Rows of the server's database that wait for a lock. */
  async function waitingOnLocks(): Promise<number> {
    const [row] = await server.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    return row?.n ?? 0;
  }

  it("is answered busy after waitMs while another transaction holds the record, not after that transaction", async () => {
    const store = drizzleStore({ db: server.db, waitMs: 300 });
    const key = globalThis.crypto.randomUUID();
    await expired(store, key);
    const locker = postgres(server.url, { max: 1, onnotice: () => {} });
    try {
      await locker.begin(async (holding) => {
        await holding`select 1 from idempotency_keys where key = ${key} for update`;
        // A busy claim leaves the transaction aborted: the caller must roll it back, here by throwing.
        const outcome = await store.atomic
          .transaction(async (session) => {
            throw await session.claim(claimFor(key));
          })
          .catch((thrown: unknown) => thrown);
        expect(outcome).toEqual({ status: "busy" });
      });
    } finally {
      await locker.end();
    }
  });

  it.each(POSTGRES_JS)(
    "keeps its claim when a 4xx undoes the procedure's writes, though it was won by a later insert (%s)",
    async (_, db) => {
      const store = drizzleStore({ db: db() });
      const key = globalThis.crypto.randomUUID();
      await expired(store, key);
      const locker = postgres(server.url, { max: 1, onnotice: () => {} });
      try {
        const holding = await locker.reserve();
        await holding`begin`;
        await holding`select 1 from idempotency_keys where key = ${key} for update`;
        const outcome = store.atomic.transaction(async (session) => {
          const claimed = await session.claim(claimFor(key));
          await session.tx.execute(sql`insert into notes (key) values (${key})`);
          await session.complete(claimFor(key).id, { status: 404, body: '{"error":"gone"}' }, Date.now() + 60_000, {
            undoEffects: true,
          });
          return claimed;
        });
        // The replacing update waits for the held row; the row is deleted under it, so the claim's next attempt inserts.
        await vi.waitFor(async () => expect(await waitingOnLocks()).toBe(1));
        await holding`delete from idempotency_keys where key = ${key}`;
        await holding`commit`;
        holding.release();
        const claimed = await outcome;
        expect(claimed).toMatchObject({ status: "claimed", takeover: false });
        // Kept under the claim's own fence: not stored again, in a transaction of its own, after a failed undo.
        expect(await store.get(claimFor(key).id)).toMatchObject({
          state: "completed",
          fence: claimed.status === "claimed" ? claimed.fence : Number.NaN,
          response: { status: 404 },
        });
      } finally {
        await locker.end();
      }
      expect(rowsOf(await server.db.execute(sql`select count(*)::int as n from notes where key = ${key}`))[0]?.n).toBe(
        0,
      );
    },
  );
});

describe("a statement that bypasses the idempotent transaction", () => {
  const bypassMessage =
    /notes\.add sent a statement through the database itself while its idempotent transaction holds/;

  /** Claims a key in an atomic transaction of `store`, then runs `bypass` from inside the procedure. */
  function procedureThatBypasses(store: ReturnType<typeof drizzleStore>, bypass: () => PromiseLike<unknown>) {
    return store.atomic.transaction(async (session) => {
      await session.claim(claimFor(globalThis.crypto.randomUUID()));
      await bypass();
    });
  }

  it("fails at once on a pool of one connection, which the transaction holds, and the database stays usable", async () => {
    for (const open of [openPostgres, openNodePostgres]) {
      const single = await open(inject("postgresUrl"), { max: 1 });
      try {
        await single.query("create table notes (id serial primary key, key text not null)");
        const bypass = () => single.db.execute(sql`insert into notes (key) values ('bypass')`);
        const error = await procedureThatBypasses(drizzleStore({ db: single.db }), bypass).catch((caught) => caught);
        // Refused at the driver's client, so Drizzle reports the statement and gives the refusal as its cause.
        expect(causesOf(error).join("\n")).toMatch(bypassMessage);
        expect(rowsOf(await single.db.execute(sql`select count(*)::int as n from notes`))[0]?.n).toBe(0);
      } finally {
        await single.close();
      }
    }
  });

  it("fails at once on PGlite, through the store's db, another Drizzle instance or the client itself", async () => {
    const client = pglite.db.$client;
    const store = drizzleStore({ db: pglite.db });
    const other = drizzlePglite(client);
    for (const bypass of [
      () => pglite.db.execute(sql`select 1`),
      () => other.execute(sql`select 1`),
      () => client.query("select 1"),
      () => pglite.db.transaction(async (tx) => tx.execute(sql`select 1`)),
    ]) {
      const error = await procedureThatBypasses(store, bypass).catch((caught: unknown) => caught);
      // A statement through another Drizzle instance reaches the client, and Drizzle wraps the refusal as its cause.
      expect(causesOf(error).join("\n")).toMatch(bypassMessage);
    }
    expect(rowsOf(await other.execute(sql`select 1 as one`))[0]?.one).toBe(1);
  });

  it("is not watched with watchBypasses: false, which leaves the driver's client as it is", async () => {
    const own = await openPglite();
    try {
      const { query, exec, transaction } = own.db.$client;
      drizzleStore({ db: own.db, watchBypasses: false });
      expect([own.db.$client.query, own.db.$client.exec, own.db.$client.transaction]).toEqual([
        query,
        exec,
        transaction,
      ]);
      drizzleStore({ db: own.db });
      expect(own.db.$client.query).not.toBe(query);
    } finally {
      await own.close();
    }
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const key = globalThis.crypto.randomUUID();
      await drizzleStore({ db: server.db, watchBypasses: false }).atomic.transaction(async (session) => {
        await session.claim({ ...claimFor(key), id: { ...claimFor(key).id, path: "notes.unwatched" } });
        await server.db.execute(sql`insert into notes (key) values (${key})`);
      });
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
    }
  });

  it("runs inside the transaction on node-postgres's single Client, where the database and the transaction share it", async () => {
    const client = new pg.Client({ connectionString: nodePostgres.url });
    await client.connect();
    try {
      const db = drizzleNodePostgres({ client });
      const key = globalThis.crypto.randomUUID();
      const undone = drizzleStore({ db }).atomic.transaction(async (session) => {
        await session.claim(claimFor(key));
        await db.execute(sql`insert into notes (key) values (${key})`);
        throw new Error("roll it all back");
      });
      await expect(undone).rejects.toThrow("roll it all back");
      expect(rowsOf(await db.execute(sql`select count(*)::int as n from notes where key = ${key}`))[0]?.n).toBe(0);
    } finally {
      await client.end();
    }
  });

  it("runs on a pool with one warning, and another request's statement meanwhile is not taken for it", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const store = drizzleStore({ db: server.db });
      const key = globalThis.crypto.randomUUID();
      let startOther!: () => void;
      // Another request: its statement is sent while the transaction is open, from its own async context.
      const other = new Promise<void>((resolve) => (startOther = resolve)).then(() =>
        server.db.execute(sql`insert into notes (key) values (${`${key}-other`})`),
      );
      await store.atomic.transaction(async (session) => {
        await session.claim(claimFor(key));
        await session.tx.execute(sql`insert into notes (key) values (${key})`);
        startOther();
        await other;
        await server.db.execute(sql`insert into notes (key) values (${`${key}-bypass`})`);
      });
      const rows = rowsOf(await server.db.execute(sql`select key from notes where key like ${`${key}%`} order by key`));
      expect(rows.map((row) => row.key)).toEqual([key, `${key}-bypass`, `${key}-other`]);
      expect(warn.mock.calls.map(([message]) => String(message))).toEqual([
        expect.stringMatching(
          /notes\.add sent a statement through the database itself, outside its idempotent transaction/,
        ),
      ]);
    } finally {
      warn.mockRestore();
    }
  });
});
