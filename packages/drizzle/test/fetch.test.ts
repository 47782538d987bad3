/**
 * The Fetch adapter (`withIdempotency` from `@idemkit/core`) over real HTTP on 127.0.0.1, with drizzleStore on
 * PostgreSQL (atomic mode: the handler writes through `tx`) and on PGlite, and lease mode on the same store: the
 * contract the tRPC middleware keeps, said in statuses, bodies and headers.
 */
import { type IdempotencyStore, memoryStore } from "@idemkit/core";
import { withIdempotency } from "@idemkit/core/fetch";
import { type Driver, type NotesDatabase, notesDatabases, serveFetch } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { afterEach, describe, expect, expectTypeOf, it, vi } from "vitest";
import { drizzleStore } from "../src/index.js";

const databases = notesDatabases(4);
const closers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((closer) => closer.close()));
});

/** An orders endpoint that writes a note per order through the idempotent transaction, counting its runs. */
async function serveOrders(database: NotesDatabase, { held }: { held?: Promise<void> } = {}) {
  let runs = 0;
  const handler = withIdempotency(
    async (request, { tx, key }) => {
      runs++;
      const { item } = (await request.json()) as { item: string };
      if (item === "unknown") return Response.json({ error: "no such item" }, { status: 404 });
      if (item === "broken") return Response.json({ error: "the shop failed" }, { status: 500 });
      await tx.execute(sql`insert into notes (key) values (${key})`);
      await held;
      return Response.json(
        { orderId: runs, item },
        { status: 201, headers: { location: `/orders/${runs}`, "set-cookie": "session=first-client" } },
      );
    },
    {
      store: drizzleStore({ db: database.db }),
      scope: (request) => request.headers.get("x-user") ?? "anonymous",
      maxBodyBytes: 64_000,
    },
  );
  const server = await serveFetch(handler);
  closers.push(server);
  const notes = async (key: string) => {
    const rows = await database.query<{ n: number }>("select count(*)::int as n from notes where key = $1", [key]);
    return rows[0]?.n ?? 0;
  };
  return { url: `${server.url}/api/orders`, runs: () => runs, notes };
}

function order(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-user": "alice", ...headers },
    body: JSON.stringify(body),
  });
}

describe.each(["postgres.js", "node-postgres", "PGlite"] satisfies Driver[])("atomic mode on %s", (driver) => {
  it("runs the first request, and answers its duplicate with the stored answer, marked replayed", async () => {
    const shop = await serveOrders(databases[driver]);
    const key = globalThis.crypto.randomUUID();
    const first = await order(shop.url, { item: "tea" }, { "idempotency-key": key });
    expect(first.status).toBe(201);
    expect(first.headers.get("set-cookie")).toBe("session=first-client");
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const firstBody = await first.text();
    const again = await order(shop.url, { item: "tea" }, { "idempotency-key": key });
    expect(again.status).toBe(201);
    expect(await again.text()).toBe(firstBody);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe("/orders/1");
    expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"));
    // What was particular to the first client is not handed to the next.
    expect(again.headers.get("set-cookie")).toBeNull();
    expect(shop.runs()).toBe(1);
    expect(await shop.notes(key)).toBe(1);
  });

  it("runs concurrent duplicates once: each gets the one answer", async () => {
    const shop = await serveOrders(databases[driver]);
    const key = globalThis.crypto.randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => order(shop.url, { item: "tea" }, { "idempotency-key": key })),
    );
    const bodies = await Promise.all(answers.map((answer) => answer.text()));
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 201));
    expect(new Set(bodies).size).toBe(1);
    expect(shop.runs()).toBe(1);
    expect(await shop.notes(key)).toBe(1);
  });
});

describe("refusals, before anything runs", () => {
  it("a missing or malformed key is 400, typed in the JSON body", async () => {
    const shop = await serveOrders(databases["postgres.js"]);
    const missing = await order(shop.url, { item: "tea" });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { code: "KEY_MISSING", retryable: false } });
    const malformed = await order(shop.url, { item: "tea" }, { "idempotency-key": "a b" });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { code: "KEY_INVALID" } });
    expect(shop.runs()).toBe(0);
  });

  it("the same key with another body is 422, and the first answer is kept", async () => {
    const shop = await serveOrders(databases["postgres.js"]);
    const key = globalThis.crypto.randomUUID();
    await order(shop.url, { item: "tea" }, { "idempotency-key": key });
    const other = await order(shop.url, { item: "kettle" }, { "idempotency-key": key });
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({ error: { code: "FINGERPRINT_MISMATCH" } });
    expect(shop.runs()).toBe(1);
  });

  it("a body over maxBodyBytes is 413, chunked or declared", async () => {
    const shop = await serveOrders(databases["postgres.js"]);
    const big = { item: "x".repeat(100_000) };
    const declared = await order(shop.url, big, { "idempotency-key": globalThis.crypto.randomUUID() });
    expect(declared.status).toBe(413);
    const chunks = new ReadableStream({
      start(controller) {
        for (let sent = 0; sent < 12; sent++) controller.enqueue(new TextEncoder().encode("x".repeat(10_000)));
        controller.close();
      },
    });
    const chunked = await fetch(shop.url, {
      method: "POST",
      headers: { "idempotency-key": globalThis.crypto.randomUUID(), "x-user": "alice" },
      body: chunks,
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(await chunked.json()).toMatchObject({ error: { code: "BODY_TOO_LARGE" } });
    expect(shop.runs()).toBe(0);
  });

  it("a body that stalls is 408 once bodyTimeoutMs passed, retryable: nothing ran", async () => {
    let runs = 0;
    const handler = withIdempotency(
      () => {
        runs++;
        return new Response("ran");
      },
      { store: memoryStore(), scope: () => "alice" },
    );
    const stalled = new ReadableStream({ start: (controller) => controller.enqueue(new Uint8Array([123])) });
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const answering = handler(
        new Request("http://shop.test/api/orders", {
          method: "POST",
          headers: { "idempotency-key": globalThis.crypto.randomUUID() },
          body: stalled,
          duplex: "half",
        } as RequestInit),
      );
      await vi.advanceTimersByTimeAsync(10_000);
      const answer = await answering;
      expect(answer.status).toBe(408);
      expect(await answer.json()).toMatchObject({ error: { code: "BODY_TIMEOUT", retryable: true } });
      expect(runs).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("another user's request with the same key is that user's own", async () => {
    const shop = await serveOrders(databases["postgres.js"]);
    const key = globalThis.crypto.randomUUID();
    await order(shop.url, { item: "tea" }, { "idempotency-key": key });
    const bob = await order(shop.url, { item: "tea" }, { "idempotency-key": key, "x-user": "bob" });
    expect(bob.headers.get("idempotent-replayed")).toBeNull();
    expect(shop.runs()).toBe(2);
  });
});

describe("what is stored", () => {
  it("a stored 4xx replays; a 5xx is released, so the retry runs again", async () => {
    const shop = await serveOrders(databases["postgres.js"]);
    const refusedKey = globalThis.crypto.randomUUID();
    expect((await order(shop.url, { item: "unknown" }, { "idempotency-key": refusedKey })).status).toBe(404);
    const refusedAgain = await order(shop.url, { item: "unknown" }, { "idempotency-key": refusedKey });
    expect(refusedAgain.status).toBe(404);
    expect(refusedAgain.headers.get("idempotent-replayed")).toBe("true");
    const failedKey = globalThis.crypto.randomUUID();
    expect((await order(shop.url, { item: "broken" }, { "idempotency-key": failedKey })).status).toBe(500);
    const failedAgain = await order(shop.url, { item: "broken" }, { "idempotency-key": failedKey });
    expect(failedAgain.headers.get("idempotent-replayed")).toBeNull();
    expect(shop.runs()).toBe(3);
  });

  it("a GET is not run: 405, naming the methods it protects", async () => {
    let runs = 0;
    const handler = withIdempotency(
      () => {
        runs++;
        return new Response("the menu");
      },
      { store: memoryStore(), scope: () => "alice" },
    );
    const answer = await handler(new Request("http://shop.test/api/menu"));
    expect(answer.status).toBe(405);
    expect(answer.headers.get("allow")).toBe("POST, PUT, PATCH, DELETE");
    expect(runs).toBe(0);
  });

  it("a multipart form sent again (a new boundary each time) replays; another file is 422", async () => {
    let runs = 0;
    const handler = withIdempotency(
      async (request) => {
        runs++;
        const form = await request.formData();
        return Response.json({ name: form.get("name"), size: (form.get("receipt") as File).size });
      },
      { store: memoryStore(), scope: () => "alice" },
    );
    const server = await serveFetch(handler);
    closers.push(server);
    const key = globalThis.crypto.randomUUID();
    const send = (receipt: string) => {
      const form = new FormData();
      form.set("name", "refund");
      form.set("receipt", new File([receipt], "receipt.txt", { type: "text/plain" }));
      return fetch(`${server.url}/api/refunds`, { method: "POST", headers: { "idempotency-key": key }, body: form });
    };
    expect((await send("12.50")).status).toBe(200);
    const again = await send("12.50");
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await send("99.99")).status).toBe(422);
    expect(runs).toBe(1);
  });

  it("a multipart body that cannot be parsed is 400 BODY_INVALID, not a 500 clients retry; nothing runs", async () => {
    let runs = 0;
    const handler = withIdempotency(
      async () => {
        runs++;
        return Response.json({ ok: true });
      },
      { store: memoryStore(), scope: () => "alice", path: () => "/api/refunds" },
    );
    const server = await serveFetch(handler);
    closers.push(server);
    const answer = await fetch(`${server.url}/api/refunds`, {
      method: "POST",
      headers: {
        "idempotency-key": globalThis.crypto.randomUUID(),
        "content-type": "multipart/form-data; boundary=never-closed",
      },
      body: '--never-closed\r\ncontent-disposition: form-data; name="name"\r\n\r\nrefund',
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ error: { code: "BODY_INVALID", retryable: false } });
    expect(runs).toBe(0);
  });
});

/**
 * Once the work has run, nothing that fails afterwards may release its key: the retry would run it a second time. A
 * charge endpoint in lease mode on PostgreSQL (its effect leaves the database) whose answer cannot be stored.
 */
describe("an answer that fails after the work, on PostgreSQL in lease mode", () => {
  async function serveCharge(options: { redact?: () => string; body?: () => BodyInit }) {
    let charges = 0;
    const handler = withIdempotency(
      async () => {
        charges++;
        return new Response(options.body?.() ?? JSON.stringify({ charged: 12 }), { status: 201 });
      },
      {
        store: drizzleStore({ db: databases["postgres.js"].db }),
        mode: "lease",
        scope: () => "alice",
        path: () => "/api/charge",
        ...(options.redact && { redact: options.redact }),
      },
    );
    const server = await serveFetch(handler);
    closers.push(server);
    const key = globalThis.crypto.randomUUID();
    const charge = () => fetch(`${server.url}/api/charge`, { method: "POST", headers: { "idempotency-key": key } });
    return { charge, charges: () => charges };
  }

  async function expectKeptRefused(shop: Awaited<ReturnType<typeof serveCharge>>) {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      for (const answer of [await shop.charge(), await shop.charge()]) {
        expect(answer.status).toBe(500);
        expect(answer.headers.get("idempotent-resend")).toBe("never");
        expect(await answer.json()).toMatchObject({
          error: { code: "RAN_WITHOUT_ANSWER", retryable: false, resend: "never" },
        });
      }
      expect(shop.charges()).toBe(1);
      expect(logged).toHaveBeenCalledTimes(1);
    } finally {
      logged.mockRestore();
    }
  }

  it("a redact that throws keeps the key refused: pressed twice, charged once", async () => {
    await expectKeptRefused(
      await serveCharge({
        redact: () => {
          throw new Error("the redaction rules failed to load");
        },
      }),
    );
  });

  it("a redact whose text PostgreSQL cannot keep (U+0000) keeps the key refused, never a store failure: charged once", async () => {
    await expectKeptRefused(await serveCharge({ redact: () => '{"charged":"\u0000"}' }));
  });

  it("a body that fails while it is read keeps the key refused: charged once", async () => {
    const failing = () =>
      new ReadableStream<Uint8Array>({
        pull(controller) {
          controller.error(new Error("the upstream answer broke off"));
        },
      });
    await expectKeptRefused(await serveCharge({ body: failing }));
  });
});

describe("lease mode", () => {
  it("with a lease-only store, answers a duplicate that arrives while the first runs 409 with Retry-After", async () => {
    let release!: () => void;
    const held = new Promise<void>((done) => {
      release = done;
    });
    let runs = 0;
    const store: IdempotencyStore = memoryStore();
    const handler = withIdempotency(
      async (_request, { tx, signal }) => {
        expect(tx).toBeUndefined();
        expect(signal.aborted).toBe(false);
        runs++;
        await held;
        return Response.json({ charged: true });
      },
      { store, scope: () => "alice" },
    );
    const key = globalThis.crypto.randomUUID();
    const post = () =>
      handler(new Request("http://shop.test/api/charge", { method: "POST", headers: { "idempotency-key": key } }));
    const first = post();
    await expect.poll(() => runs).toBe(1);
    const duplicate = await post();
    expect(duplicate.status).toBe(409);
    expect(duplicate.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await duplicate.json()).toMatchObject({ error: { code: "IN_PROGRESS", retryable: true } });
    release();
    expect((await first).status).toBe(200);
    const replay = await post();
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(runs).toBe(1);
  });
});

describe("types", () => {
  it("follow the mode: tx is the transaction in atomic mode, undefined in lease mode; the other mode's options do not compile", () => {
    const typed = (database: NotesDatabase) => [
      withIdempotency(
        (_request, { tx }) => {
          expectTypeOf(tx).not.toBeUndefined();
          return new Response();
        },
        { store: drizzleStore({ db: database.db }), scope: () => "alice", transactionTimeoutMs: 1_000 },
      ),
      withIdempotency(
        (_request, { tx }) => {
          expectTypeOf(tx).toBeUndefined();
          return new Response();
        },
        { store: memoryStore(), scope: () => "alice", leaseMs: 1_000 },
      ),
      // @ts-expect-error a lease is lease mode's
      withIdempotency(() => new Response(), { store: drizzleStore({ db: database.db }), scope: () => "a", leaseMs: 1 }),
      // @ts-expect-error a lease-only store has no transaction to bound
      withIdempotency(() => new Response(), { store: memoryStore(), scope: () => "a", transactionTimeoutMs: 1 }),
    ];
    expectTypeOf(typed).toBeFunction();
  });
});
