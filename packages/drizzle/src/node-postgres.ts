/**
 * node-postgres (a `pg.Pool`) under a Drizzle database: how idemkit's transactions run on it.
 *
 * node-postgres sends one statement at a time on a connection, each once the one before was answered, unless the
 * client is in its pipeline mode (`client.pipeline = true`, node-postgres 8.23 and later): then it sends each at once,
 * behind the ones still unanswered. idemkit's transactions run on a client of the pool checked out in that mode, so
 * the statements it sends together cost one round trip:
 *
 *   BEGIN                 Drizzle's, awaited before the callback runs
 *   claim ┐ one flight
 *   SAVEPOINT ┘
 *   …the procedure's statements…
 *   completion ┐ one flight: Drizzle's COMMIT is sent right behind the completion, before its answer
 *   COMMIT     ┘
 *
 * What pipelining changes is only when statements leave: each still has its own answer, and a failed one still
 * aborts the transaction, which the statement after it (the completion, processOnce's check) then says. The client
 * leaves pipeline mode before it goes back to the pool. An older node-postgres has no pipeline mode, and sends them
 * one at a time, as before. The transaction is Drizzle's own: its session's, on a pool that checks out pipelined
 * clients (see `drizzle-session.ts`).
 */
import type { Driver } from "./driver.js";
import { primaryOf, sessionOn, transactionOn } from "./drizzle-session.js";
import type { AnyPgDatabase } from "./statements.js";

/** A node-postgres pool (`pg.Pool`, or one with its API), as far as idemkit uses it. */
interface NodePostgresPool {
  connect(): Promise<PooledClient>;
  totalCount: number;
}

/** A client checked out of the pool: `pipeline` is node-postgres 8.23's switch, `release` the pool's, per checkout. */
interface PooledClient {
  pipeline?: boolean;
  release(error?: unknown): void;
}

/** The node-postgres pool of `db`, or undefined on another driver (or a single `pg.Client`). */
export function nodePostgresPool(db: object): NodePostgresPool | undefined {
  const client = (primaryOf(db) as { $client?: unknown }).$client as Partial<NodePostgresPool> | undefined;
  return typeof client?.connect === "function" && typeof client.totalCount === "number"
    ? (client as NodePostgresPool)
    : undefined;
}

/** The driver of a Drizzle database on a node-postgres pool: see the file's comment. */
export function nodePostgresDriver(db: AnyPgDatabase, pool: NodePostgresPool): Driver {
  const session = sessionOn(db, pool);
  if (!session) return { transaction: (work) => db.transaction(work), provesCommits: true };
  // The pool itself in every other way (Drizzle asks whether its client is a pool), checking out pipelined clients.
  const pipelining = Object.create(pool, { connect: { value: () => checkedOutPipelined(pool) } }) as object;
  return { transaction: (work) => transactionOn(session, pipelining, work), provesCommits: true };
}

/** A client of `pool` in pipeline mode, which leaves it as it goes back to the pool. */
async function checkedOutPipelined(pool: NodePostgresPool): Promise<PooledClient> {
  const client = await pool.connect();
  if (!("pipeline" in client)) return client;
  client.pipeline = true;
  const release = client.release;
  client.release = (error?: unknown) => {
    client.pipeline = false;
    release.call(client, error);
  };
  return client;
}
