/**
 * The built demo as a real `next start` process over real HTTP: the curl example of docs/development.md, run as
 * written; and its edge: a chunked body past the limit, one that never ends and one that stops halfway are each answered within a bound, and a SIGTERM while a request is stuck
 * mid-body, or while a call is still running, still lets the process exit; the call's retry runs it once. Needs the
 * build (`npm test` builds first).
 */
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { request } from "node:http";
import { promisify } from "node:util";
import { createDatabase } from "@idemkit/testkit";
import postgres from "postgres";
import superjson from "superjson";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type Instance, placeOrder, ready, startInstance } from "../chaos/harness";
import { MAX_BODY_BYTES } from "../src/server/router";
import { DRAIN_MS } from "../src/server/shutdown";

/** The stalled-body bound the instance runs with: short, so the test waits little for it. */
const BODY_TIMEOUT_MS = 1_000;

let database: Awaited<ReturnType<typeof createDatabase>>;
let app: Instance;

beforeAll(async () => {
  database = await createDatabase(inject("postgresUrl"));
  app = await startInstance("edge", database.url, {
    IDEMKIT_BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
    // For GET /api/faults, which says when the handler holds a body; no fault is armed here.
    IDEMKIT_FAULTS: "1",
  });
  await ready(app);
}, 90_000);
afterAll(async () => {
  app?.kill();
  await database?.drop();
});

interface Answer {
  status: number;
  body: string;
}

/** What a test's client does with the body: writes chunks, ends it (or not), and sees whether the answer came. */
interface BodyWriter {
  /** Resolves once the chunk is handed to the socket, after a turn of the event loop (so answers are read). */
  write(chunk: string): Promise<void>;
  end(): void;
  answered(): boolean;
}

/** POSTs placeOrder with a chunked body that `send` writes; resolves with the answer. */
function postChunked(base: string, send: (body: BodyWriter) => Promise<void>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let done = false;
    const outgoing = request(`${base}/api/trpc/checkout.placeOrder`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "transfer-encoding": "chunked",
        cookie: "uid=edge",
        "idempotency-key": globalThis.crypto.randomUUID(),
      },
    });
    outgoing.on("response", (incoming) => {
      done = true;
      let body = "";
      incoming.setEncoding("utf8").on("data", (chunk: string) => {
        body += chunk;
      });
      incoming.on("end", () => resolve({ status: incoming.statusCode ?? 0, body }));
      incoming.on("error", reject);
    });
    // The server may close the connection on a body it refused while this side is still writing.
    outgoing.on("error", (error) => {
      if (!done) reject(error);
    });
    const write = (chunk: string) =>
      new Promise<void>((written) => {
        if (!outgoing.write(chunk)) outgoing.once("drain", () => setImmediate(written));
        else setImmediate(written);
      });
    send({ write, end: () => outgoing.end(), answered: () => done }).catch(reject);
  });
}

const cart = (padding = "") => JSON.stringify({ ...superjson.serialize({ items: [{ sku: "tea", qty: 1 }] }), padding });

describe("the curl example of docs/development.md", () => {
  it("places an order as written, and run twice, replays it: Idempotent-Replayed and the same order", async () => {
    const readme = await readFile(new URL("../../../docs/development.md", import.meta.url), "utf8");
    const [, block = ""] = /```sh\n(KEY=[\s\S]*?curl -i localhost:3000[\s\S]*?)\n```/.exec(readme) ?? [];
    const [keyLine = "", ...curl] = block.replaceAll("localhost:3000", new URL(app.base).host).split("\n");
    const script = [keyLine, ...curl, 'echo "--- again"', ...curl].join("\n");
    const { stdout } = await promisify(execFile)("bash", ["-c", script]);
    const [first = "", second = ""] = stdout.split("--- again");
    expect(first).toMatch(/^HTTP\/1\.1 200/);
    expect(second).toMatch(/^\s*HTTP\/1\.1 200/);
    expect(second.toLowerCase()).toContain("idempotent-replayed: true");
    const body = (answer: string) => answer.slice(answer.indexOf("\r\n\r\n")).trim();
    expect(body(second)).toBe(body(first));
    expect(JSON.parse(body(first)).result.data.json).toMatchObject({ orderId: expect.any(Number) });
  });
});

describe("the demo's edge", () => {
  it("answers 413 to a chunked body past the limit, as to a declared one", async () => {
    const answer = await postChunked(app.base, async ({ write, end }) => {
      const body = cart("x".repeat(MAX_BODY_BYTES + 6_000));
      for (let at = 0; at < body.length; at += 10_000) await write(body.slice(at, at + 10_000));
      end();
    });
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "PAYLOAD_TOO_LARGE" } });
  });

  it("answers 413 to a chunked body that never ends, once it passes the limit", async () => {
    const answer = await postChunked(app.base, async ({ write, answered }) => {
      await write('{"json":{"items":[]},"padding":"');
      while (!answered()) await write("x".repeat(8_192));
    });
    expect(answer.status).toBe(413);
  });

  it("answers 408 to a body that stops halfway, once the body's time is up", async () => {
    const answer = await postChunked(app.base, ({ write }) => write(cart().slice(0, 10)));
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "REQUEST_TIMEOUT" } });
  });

  it("passes a chunked body within the limit to tRPC whole: the order is placed", async () => {
    const answer = await postChunked(app.base, async ({ write, end }) => {
      const body = cart("x".repeat(20_000));
      for (let at = 0; at < body.length; at += 4_000) await write(body.slice(at, at + 4_000));
      end();
    });
    expect(answer.status).toBe(200);
    const { json } = JSON.parse(answer.body).result.data;
    expect(json).toMatchObject({ orderId: expect.any(Number), totalCents: 650 });
  });

  it("exits on SIGTERM while a request is stuck mid-body, answering it 503 to send again", async () => {
    const stuck = postChunked(app.base, async ({ write }) => {
      await write(cart().slice(0, 10));
    });
    // SIGTERM once the handler holds the request, as the process itself says.
    const bodiesBeingRead = async () => {
      const state = await fetch(`${app.base}/api/faults`).then((answer) => answer.json());
      return (state as { bodiesBeingRead: number }).bodiesBeingRead;
    };
    await expect.poll(bodiesBeingRead, { timeout: 10_000 }).toBe(1);
    const exitCode = await app.terminate();
    expect(exitCode).not.toBeNull();
    const answer = await stuck;
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "SHUTTING_DOWN" } });
  }, 20_000);
});

describe("the demo on SIGTERM with a call still running", () => {
  it("exits within DRAIN_MS; the call commits nothing, and its retry with the same key places one order", async () => {
    const sql = postgres(database.url, { max: 1, onnotice: () => {} });
    const slow = await startInstance("slow", database.url, { IDEMKIT_FAULTS: "1" });
    try {
      await ready(slow);
      const armed = await fetch(`${slow.base}/api/faults`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie: "uid=drain" },
        body: JSON.stringify({ slowMs: 30_000 }),
      });
      expect(armed.status).toBe(200);
      const key = globalThis.crypto.randomUUID();
      const cutShort = placeOrder(slow.base, "drain", key);
      // The order's transaction is open (its writes done, the fault holding it before commit).
      await expect
        .poll(
          async () =>
            (
              await sql`select count(*)::int as open from pg_stat_activity
              where datname = current_database() and state = 'idle in transaction'`
            )[0]?.open,
          { timeout: 10_000 },
        )
        .toBeGreaterThan(0);
      // Next.js alone waits for the call, 30 s; the drain lets it run DRAIN_MS at most. Far from both, a verdict.
      const stillRunning = new Promise<"still running">((resolve) =>
        setTimeout(resolve, 4 * DRAIN_MS, "still running"),
      );
      expect(await Promise.race([slow.terminate(), stillRunning])).not.toBe("still running");
      expect((await cutShort).status).toBe("none");

      const next = await startInstance("after", database.url);
      try {
        await ready(next);
        expect((await placeOrder(next.base, "drain", key)).status).toBe(200);
        const [{ orders }] =
          (await sql`select count(*)::int as orders from orders where user_id = ${"drain"}`) as unknown as [
            { orders: number },
          ];
        expect(orders).toBe(1);
      } finally {
        next.kill();
      }
    } finally {
      slow.kill();
      await sql.end();
    }
  }, 60_000);
});
