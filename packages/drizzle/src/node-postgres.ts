/**
 * node-postgres (a `pg.Pool`) under a Drizzle database: how idemkit's transactions run on it.
 *
 * node-postgres sends one statement at a time on a connection, each once the one before was answered, unless the
 * client is in its pipeline mode (`client.pipeline = true`, node-postgres 8.23 and later): then it sends each at once,
 * behind the ones still unanswered. idemkit's transactions run on a client of the pool checked out in that mode, so
 * the statements it sends together cost one round trip:
 *
 *   BEGIN     ┐ one flight: Drizzle's BEGIN is answered at once as it is sent (see `beginUnawaited`), and the
 *   claim     │ claim's answer read only with BEGIN's
 *   SAVEPOINT ┘
 *   …the procedure's statements…
 *   completion ┐ one flight: Drizzle's COMMIT is sent right behind the completion, before its answer
 *   COMMIT     ┘
 *
 * Where BEGIN fails on a connection that stays open, what was sent behind it ran on its own: the procedure never runs
 * (the claim's answer is BEGIN's failure), but the claim may have been kept, its record in progress until its lease
 * ends, as a crashed lease-mode call's is; the client is then ended, not given back.
 *
 * Each statement still has its own answer, and a failed one still aborts the transaction, which the statement after
 * it (the completion, processOnce's check) then says. Two things differ in pipeline mode: a statement that outlives
 * the pool's `query_timeout` ends the connection (a pipeline cannot skip an answer), so under a `query_timeout` the
 * client is not pipelined; and a query that keeps a portal open (a cursor) is refused, which Drizzle never sends.
 * The client leaves pipeline mode, and its `query` is its own again, before it goes back to the pool; an older
 * node-postgres has no pipeline mode, and sends one statement at a time. While checked out, the client's errors are listened to (Drizzle
 * before 1.0 does not), so a connection lost under the transaction fails it instead of ending the process, and the
 * pool is told to discard the client. The transaction is Drizzle's own: its session's, on a pool that checks out
 * such clients (see `drizzle-session.ts`).
 */

import type { AnyPgDatabase, Transactions } from "./database.js";
import { afterBegin, primaryOf, sessionOn, transactionOn } from "./drizzle-session.js";

/** A node-postgres pool (`pg.Pool`, or one with its API), as far as idemkit uses it. */
interface NodePostgresPool {
  connect(): Promise<PooledClient>;
  totalCount: number;
  options?: { max?: unknown };
}

/** A client checked out of the pool: `pipeline` is node-postgres 8.23's switch, `release` the pool's, per checkout. */
interface PooledClient {
  query(config: unknown, ...rest: unknown[]): unknown;
  pipeline?: boolean;
  connectionParameters?: { query_timeout?: unknown };
  release(error?: unknown): void;
  on(event: "error", listener: (error: unknown) => void): unknown;
  off(event: "error", listener: (error: unknown) => void): unknown;
}

/** The node-postgres pool of `db`, or undefined on another driver (or a single `pg.Client`). */
export function nodePostgresPool(db: object): NodePostgresPool | undefined {
  const client = (primaryOf(db) as { $client?: unknown }).$client as Partial<NodePostgresPool> | undefined;
  return typeof client?.connect === "function" && typeof client.totalCount === "number"
    ? (client as NodePostgresPool)
    : undefined;
}

/** The driver of a Drizzle database on a node-postgres pool: see the file's comment. */
export function nodePostgresDriver(db: AnyPgDatabase, pool: NodePostgresPool): Transactions {
  // A single `pg.Client` has no entrances to watch: its transaction runs on the connection every statement uses.
  const entrances = { client: pool, methods: ["query", "connect"], oneConnection: pool.options?.max === 1 };
  const session = sessionOn(db, pool);
  if (!session) return { transaction: (work) => db.transaction(work), entrances };
  // The pool itself in every other way (Drizzle asks whether its client is a pool), checking out pipelined clients.
  const pipelining = Object.create(pool, { connect: { value: () => checkedOutPipelined(pool) } }) as object;
  return { transaction: (work) => transactionOn(session, pipelining, work), entrances };
}

/** A client of `pool` checked out as the file's comment says, which is given back as it was. */
async function checkedOutPipelined(pool: NodePostgresPool): Promise<PooledClient> {
  const client = await pool.connect();
  let lost: unknown;
  const onError = (error: unknown) => {
    lost ??= error;
  };
  client.on("error", onError);
  const pipelined = "pipeline" in client && !client.connectionParameters?.query_timeout;
  // `query` is the prototype's, unless something made it the client's own: given back as it was found.
  const ownQuery = Object.hasOwn(client, "query");
  const query = client.query;
  const begin = pipelined ? beginUnawaited(query.bind(client)) : undefined;
  if (begin) {
    client.pipeline = true;
    client.query = begin.query;
  }
  const release = client.release;
  client.release = (error?: unknown) => {
    if (begin) {
      client.pipeline = false;
      if (ownQuery) client.query = query;
      else delete (client as { query?: unknown }).query;
    }
    // A client whose connection failed keeps the listener: the pool ends it, which may say so again.
    if (lost === undefined) client.off("error", onError);
    // One whose BEGIN failed is in a state no one should inherit: the pool ends it.
    release.call(client, error ?? lost ?? begin?.failure());
  };
  return client;
}

/**
 * `query`, with Drizzle's BEGIN (its first statement on the client, the text `begin`, sent as a promise) answered at
 * once as it is sent, so that Drizzle sends the claim right behind it, in its flight. Every statement after it is
 * answered once its own answer and BEGIN's are in, and with BEGIN's failure if it failed (see `afterBegin`).
 */
function beginUnawaited(query: PooledClient["query"]): { query: PooledClient["query"]; failure(): unknown } {
  let begun: Promise<unknown> | undefined;
  let failure: unknown;
  return {
    failure: () => failure,
    query(config, ...rest) {
      if (begun === undefined && isDrizzlesBegin(config, rest)) {
        begun = Promise.resolve(query(config, ...rest));
        begun.catch((error: unknown) => {
          failure = error ?? new Error("BEGIN failed");
        });
        return Promise.resolve({ command: "BEGIN", rowCount: null, rows: [], fields: [] });
      }
      const answer = query(config, ...rest);
      return begun && isThenable(answer) ? afterBegin(answer, begun) : answer;
    },
  };
}

/** Whether a `query` call is Drizzle's BEGIN: the text alone, in the promise form (no callback, not a Submittable). */
function isDrizzlesBegin(config: unknown, rest: unknown[]): boolean {
  if (rest.length > 1 || rest.some((argument) => typeof argument === "function")) return false;
  if (typeof config === "string") return config.trim().toLowerCase() === "begin";
  const { text, callback, submit } = (config ?? {}) as { text?: unknown; callback?: unknown; submit?: unknown };
  return typeof text === "string" && text.trim().toLowerCase() === "begin" && !callback && !submit;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}
