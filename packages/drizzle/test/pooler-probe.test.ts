/**
 * The pooler check's verdicts, on a model of what it talks to: a direct connection (a backend per connection), and a
 * transaction pooler (server connections lent per transaction, the last freed first, as PgBouncer does) that loses
 * the statements a client prepared or prepares them again. The real PgBouncer runs in pooler.test.ts; the model
 * stages what is hard to catch there: a pooler with no second server connection to lend while it is checked.
 */
import { IdempotencyErrorCode, isIdempotencyError } from "@idemkit/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { afterPoolerSign, poolerChecked } from "../src/pooler.js";

type Rows = { pid: number }[];

/** A client connection's view of its statements: each answered as PostgreSQL would through `mode`. */
function modelClient(
  mode: "direct" | { servers: number; prepared: "lost" | "prepared again" },
  max = 4,
  greeting: "a key of its own" | "a backend's pid" = "a key of its own",
) {
  const idle = typeof mode === "object" ? Array.from({ length: mode.servers }, (_, at) => 200 + at) : [];
  const waiting: Array<(pid: number) => void> = [];
  const serverStatements = new Map<number, Set<string>>();
  let connections = 0;

  const acquire = (): Promise<number> => {
    const pid = idle.pop();
    return pid === undefined ? new Promise((resolve) => waiting.push(resolve)) : Promise.resolve(pid);
  };
  const release = (pid: number) => {
    const next = waiting.shift();
    if (next) next(pid);
    else idle.push(pid);
  };

  const connect = () => {
    const own = 100 + connections++;
    const prepared = new Set<string>();
    let holding: number | undefined;
    const run = async (text: string, prepare: boolean): Promise<Rows> => {
      if (mode === "direct") return text === "begin" || text === "rollback" ? [] : [{ pid: own }];
      if (text === "begin") {
        holding ??= await acquire();
        return [];
      }
      if (text === "rollback") {
        if (holding !== undefined) release(holding);
        holding = undefined;
        return [];
      }
      const pid = holding ?? (await acquire());
      try {
        const has = serverStatements.get(pid) ?? new Set<string>();
        serverStatements.set(pid, has);
        if (prepare && prepared.has(text) && !has.has(text) && mode.prepared === "lost") {
          throw Object.assign(new Error("prepared statement does not exist"), { code: "26000" });
        }
        if (prepare) {
          prepared.add(text);
          has.add(text);
        }
        return [{ pid }];
      } finally {
        if (holding === undefined) release(pid);
      }
    };
    return {
      own,
      unsafe: (text: string, _args?: unknown[], options?: { prepare?: boolean }) =>
        run(text, options?.prepare === true),
      release() {},
    };
  };
  const client = {
    begin() {},
    options: { prepare: true, max, port: mode === "direct" ? [5432] : [6543] },
    reserve: async () => connect(),
    // A statement on the pool, its rows carrying the BackendKeyData the connection was greeted with: its backend's
    // process id from PostgreSQL, a cancel key of the pooler's own making from a pooler.
    async unsafe(text: string) {
      const connection = connect();
      const rows = await connection.unsafe(text);
      const [row] = rows;
      // Supavisor's greeting is a counter, which may equal a backend's pid: the port then tells it apart.
      const pid = mode === "direct" ? connection.own : greeting === "a backend's pid" ? row?.pid : 987_654;
      return Object.assign(
        rows.map((found) => ({ ...found, port: 5432 })),
        { state: { pid } },
      );
    },
  };
  return { $client: client };
}

afterEach(() => {
  vi.useRealTimers();
});

const isRefusal = (value: unknown) =>
  isIdempotencyError(value) && value.code === IdempotencyErrorCode.STORE_MISCONFIGURED;
const isRetryableRefusal = (value: unknown) =>
  isIdempotencyError(value) && value.code === IdempotencyErrorCode.STORE_UNAVAILABLE;

describe("the pooler check", () => {
  it("passes a direct connection, and a later sign has it asked again rather than refused", async () => {
    const db = modelClient("direct");
    await expect(poolerChecked(db)).resolves.toBeUndefined();
    expect(isRefusal(afterPoolerSign(db, "A statement was lost."))).toBe(false);
  });

  it("proves a direct connection in one statement, holding none of the pool's connections for the rounds", async () => {
    const db = modelClient("direct");
    const reserve = vi.spyOn(db.$client, "reserve");
    await expect(poolerChecked(db)).resolves.toBeUndefined();
    expect(reserve).not.toHaveBeenCalled();
  });

  it("never takes a pooler whose greeting is a backend's pid for a direct connection: its port differs", async () => {
    const db = modelClient({ servers: 3, prepared: "lost" }, 4, "a backend's pid");
    await expect(poolerChecked(db)).rejects.toSatisfy(isRefusal);
  });

  it("asks a pool of one proved direct again after a sign, where one not proved is refused for good", async () => {
    const db = modelClient("direct", 1);
    await expect(poolerChecked(db)).resolves.toBeUndefined();
    // An app's own DISCARD ALL: this call fails as it is, and the next is checked again.
    expect(isRefusal(afterPoolerSign(db, "A statement was lost."))).toBe(false);
    await expect(poolerChecked(db)).resolves.toBeUndefined();
  });

  it("asks a pooler the second question, whatever its greeting", async () => {
    const db = modelClient({ servers: 3, prepared: "prepared again" });
    const reserve = vi.spyOn(db.$client, "reserve");
    await expect(poolerChecked(db)).resolves.toBeUndefined();
    expect(reserve).toHaveBeenCalled();
  });

  it("refuses a transaction pooler that loses prepared statements, before anything runs", async () => {
    const db = modelClient({ servers: 3, prepared: "lost" });
    await expect(poolerChecked(db)).rejects.toSatisfy(isRefusal);
  });

  it("passes a transaction pooler that prepares statements again (PgBouncer 1.21+)", async () => {
    const db = modelClient({ servers: 3, prepared: "prepared again" });
    await expect(poolerChecked(db)).resolves.toBeUndefined();
  });

  it("never lets a call run behind a pooler it could not check: refused retryably, and a sign refuses for good", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const db = modelClient({ servers: 1, prepared: "lost" });
    const checked = poolerChecked(db).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(1_000);
    // Too busy to say whether statements are lost: nothing of this call runs, and it may be sent again...
    expect(await checked).toSatisfy(isRetryableRefusal);
    // ...and a pooler was seen, so a lost statement is no app's DISCARD ALL: refused from then on.
    expect(isRefusal(afterPoolerSign(db, "A statement was lost."))).toBe(true);
    await expect(poolerChecked(db)).rejects.toSatisfy(isRefusal);
  });

  it.each(["lost", "prepared again"] as const)(
    "refuses retryably, never for good, a pooler too busy to be checked at every call that asked (statements %s)",
    async (prepared) => {
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      const db = modelClient({ servers: 1, prepared });
      const outcomes: unknown[] = [];
      for (let call = 0; call < 4; call++) {
        const checked = poolerChecked(db).catch((error: unknown) => error);
        await vi.advanceTimersByTimeAsync(1_000);
        outcomes.push(await checked);
      }
      // A pooler that keeps statements is not to be refused for its busy moments; one that loses them is, once a
      // probe can ask it, or at its first sign (above).
      expect(outcomes.every(isRetryableRefusal)).toBe(true);
    },
  );
});
