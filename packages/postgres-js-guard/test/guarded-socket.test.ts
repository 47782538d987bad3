/**
 * Connections the database ends under postgres.js 3.4.9 (here by `pg_terminate_backend`, as a crash or a restart ends
 * them), on a real PostgreSQL. Without `guardedSocket`, postgres.js fails the next statement with the error that ended
 * the session, throws an uncaught TypeError for a statement sent on a connection closed under a transaction, and
 * stalls reconnections behind a stale write: each test below fails so on a plain pool. vitest fails a run on any
 * uncaught exception, so "nothing uncaught" is checked by every test.
 *
 * Pools have one connection, so the next statement must go through the connection that was ended, and a short
 * connect_timeout, so a stalled reconnection fails it soon.
 */
import { createServer, type Server } from "node:net";
import { endingConnections } from "@idemkit/testkit";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { guardedConnections } from "../src/index.js";

const ending = endingConnections();

/** A pool, and a wait for its next connection to be closed (postgres.js's own `onclose`, before it reconnects). */
function pool({ guarded }: { guarded: boolean }): postgres.Sql & { closed(): Promise<void> } {
  let closed: () => void = () => {};
  const options = { max: 1, connect_timeout: 2, onnotice: () => {}, onclose: () => closed() };
  const client = ending.track(postgres(ending.url, guarded ? guardedConnections(options) : options));
  return Object.assign(client, {
    closed: () =>
      new Promise<void>((resolve) => {
        closed = resolve;
      }),
  });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const { terminate } = ending;

describe("guardedSocket", () => {
  it("fails a statement in flight with the error that ended its session, and the next one runs", async () => {
    const client = pool({ guarded: true });
    const [{ pid }] = (await client`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
    const closed = client.closed();
    const inFlight = client`select pg_sleep(5)`.catch((error: unknown) => error);
    await pause(50);
    await terminate(pid);
    expect(await inFlight).toMatchObject({ name: "PostgresError", code: "57P01" });
    // The error stays with the session it ended: the connection postgres.js opens next starts clean.
    await closed;
    expect(await client`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it("keeps a transaction whose connection closed under it from writing there, and the next statement runs", async () => {
    const client = pool({ guarded: true });
    const closed = client.closed();
    const transaction = client.begin(async (tx) => {
      const [{ pid }] = (await tx`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
      await terminate(pid);
      await pause(100);
      await tx`select 2`;
    });
    await expect(transaction).rejects.toMatchObject({ code: "57P01" });
    await closed;
    expect(await client`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it("ends a connection whose session ended just as a statement was sent, and the next statement runs", async () => {
    const client = pool({ guarded: true });
    const closed = client.closed();
    const transaction = client.begin(async (tx) => {
      const [{ pid }] = (await tx`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
      await terminate(pid);
      await tx`select 2`;
    });
    await expect(transaction).rejects.toThrow();
    await closed;
    expect(await client`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it("fails only what was in flight when a backend ends: the statements queued behind it run on a new connection", async () => {
    const client = pool({ guarded: true });
    const [{ pid }] = (await client`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
    const inFlight = client`select pg_sleep(5)`.catch((error: unknown) => error);
    const queued = Array.from({ length: 20 }, (_, n) => client`select ${n}::int as n`.catch((error: unknown) => error));
    await pause(50);
    await terminate(pid);
    expect(await inFlight).toMatchObject({ code: "57P01" });
    // postgres.js sends the first of them right behind the one in flight (it pipelines): that one goes with it.
    const answers = await Promise.all(queued);
    const served = answers.filter((answer, n) => JSON.stringify(answer) === JSON.stringify([{ n }]));
    expect(served.length).toBeGreaterThanOrEqual(19);
    expect(answers.filter((answer) => !served.includes(answer))).toEqual(
      answers.length - served.length === 0 ? [] : [expect.objectContaining({ code: "57P01" })],
    );
  });

  it("cancels a statement through a connection of its own, with nothing left unhandled", async () => {
    const client = pool({ guarded: true });
    const slow = client`select pg_sleep(5)`;
    const outcome = slow.catch((error: unknown) => error);
    await pause(50);
    await slow.cancel();
    expect(await outcome).toMatchObject({ code: "57014" });
    expect(await client`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it("fails statements pipelined in a transaction behind the one in flight, and the next statement runs", async () => {
    const client = pool({ guarded: true });
    const closed = client.closed();
    const transaction = client.begin(async (tx) => {
      const [{ pid }] = (await tx`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
      const both = Promise.all([tx`select pg_sleep(5)`, tx`select ${2}::int as two`]);
      // Handled now: they may fail while terminate() is still waiting for its own answer, before `await both`.
      both.catch(() => {});
      await pause(50);
      await terminate(pid);
      await both;
    });
    await expect(transaction).rejects.toMatchObject({ code: "57P01" });
    await closed;
    expect(await client`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it("waits for a cursor's code to come back before it lets the connection go", async () => {
    const client = pool({ guarded: true });
    const [{ pid }] = (await client`select pg_backend_pid() as pid`) as unknown as [{ pid: number }];
    const closed = client.closed();
    let fetches = 0;
    const cursor = client`select generate_series(1, 100) as n`.cursor(10, async () => {
      if (++fetches > 1) return;
      await terminate(pid);
      await pause(100);
    });
    await expect(cursor).rejects.toMatchObject({ code: "57P01" });
    await closed;
    expect(await client`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it("passes large results and statements through whole, in transactions and out", async () => {
    const client = pool({ guarded: true });
    const text = "x".repeat(16_000_000);
    const [echo] = await client`select ${text}::text as text`;
    expect(echo?.text).toBe(text);
    const rows = await client.begin((tx) => tx`select generate_series(1, 20000) as n`);
    expect(rows).toHaveLength(20_000);
    expect(rows.at(-1)).toEqual({ n: 20_000 });
  });

  it("sets up TLS itself: falls back to plain with prefer on a server without it, refuses it with require", async () => {
    const preferring = postgres(ending.url, guardedConnections({ max: 1, ssl: "prefer", onnotice: () => {} }));
    ending.track(preferring);
    expect(await preferring`select 1 as one`).toEqual([{ one: 1 }]);
    const requiring = postgres(ending.url, guardedConnections({ max: 1, connect_timeout: 2, ssl: "require" }));
    ending.track(requiring);
    await expect(requiring`select 1`).rejects.toThrow(/does not accept TLS/);
    const inTheUrl = postgres(`${ending.url}?sslmode=require`, guardedConnections({ max: 1, connect_timeout: 2 }));
    ending.track(inTheUrl);
    await expect(inTheUrl`select 1`).rejects.toThrow(/give it to guardedConnections/);
    await expect(inTheUrl`select 2`).rejects.toThrow(/give it to guardedConnections/);
  });
});

describe("guardedSocket, with a server that ends the session at a given message", () => {
  /**
   * A server that starts a session (no password), answers nothing after, and ends the session with a FATAL error as
   * soon as a message of type `endAt` arrives: the moments a real server's end can fall on, made exact.
   */
  async function serverEndingAt(endAt: string): Promise<{ server: Server; url: string }> {
    const server = createServer((socket) => {
      let started = false;
      socket.on("data", (chunk) => {
        if (!started) {
          started = true;
          socket.write(Buffer.concat([Buffer.from([82, 0, 0, 0, 8, 0, 0, 0, 0]), Buffer.from([90, 0, 0, 0, 5, 73])]));
          return;
        }
        if (!chunk.includes(endAt.charCodeAt(0))) return;
        const fields = Buffer.from("SFATAL\0VFATAL\0C57P01\0Mterminating connection due to administrator command\0\0");
        const header = Buffer.from([69, 0, 0, 0, 0]);
        header.writeInt32BE(fields.length + 4, 1);
        socket.end(Buffer.concat([header, fields]));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    return { server, url: `postgres://idemkit@127.0.0.1:${port}/fake` };
  }

  it.each([
    ["a statement being described (Parse, Describe, Flush)", "H", (client: postgres.Sql) => client`select ${1}::int`],
    ["a statement run (Bind, Execute, Sync)", "S", (client: postgres.Sql) => client`select 1`],
    ["a simple query", "Q", (client: postgres.Sql) => client`select 1`.simple()],
  ])("fails %s when the session ends under it, without waiting", async (_, endAt, send) => {
    const { server, url } = await serverEndingAt(endAt);
    const client = postgres(url, guardedConnections({ max: 1, fetch_types: false }));
    ending.track(client);
    try {
      await expect(send(client)).rejects.toMatchObject({ code: "57P01" });
    } finally {
      server.close();
    }
  });
});

describe("guardedSocket, when the server cannot be reached", () => {
  it("fails a statement with the socket's own error", async () => {
    const closedPort = postgres(
      "postgres://idemkit@127.0.0.1:1/none",
      guardedConnections({ max: 1, connect_timeout: 2, backoff: () => 0.01 }),
    );
    ending.track(closedPort);
    await expect(closedPort`select 1`).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });
});
