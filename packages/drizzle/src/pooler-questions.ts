/**
 * What the pooler probe (see pooler.ts) asks of a postgres.js client with `prepare` on: whether its connections reach
 * PostgreSQL itself, and else whether a transaction pooler in between loses the statements postgres.js prepares.
 */
import { isPreparedStatementLost } from "./driver-errors.js";
import type { PostgresJsClient } from "./postgres-js.js";

/**
 * The probe found every other connection of the pool taken, or the pooler's every other server connection: it asks
 * again later.
 */
export class PoolCrowded extends Error {
  constructor() {
    super("The pool had no connection free for the pooler probe.");
  }
}

/**
 * Whether `client` talks to PostgreSQL itself. PostgreSQL greets each connection with its backend's process id
 * (BackendKeyData, which postgres.js keeps as a result's `state`); a pooler greets with one of its own making: random
 * in PgBouncer, a counter in Supavisor, which a backend's pid may equal. So both must hold: the statement ran on the
 * backend that greeted the connection, and on the port the client connected to (a pooler listens on its own: 6432,
 * Supavisor's 6543; none over a Unix socket, where PostgreSQL says none). A port forwarded to another (a container's,
 * a proxy's) reads as "not proved", and the second check asks. One round trip, on a pool of any size; sent as a simple
 * query, which every pooler serves. It proves no COMMIT kept, though: an app's own `DISCARD ALL` loses postgres.js
 * 3's prepared COMMIT on a direct connection as a pooler would (see `Transactions.commitProof`).
 */
export async function reachesPostgresDirectly(client: PostgresJsClient): Promise<boolean> {
  const rows = (await client.unsafe("select pg_backend_pid() as pid, inet_server_port() as port", [], {
    simple: true,
  })) as { pid?: unknown; port?: unknown }[] & { state?: { pid?: unknown } };
  const [row] = rows;
  const ports = [client.options.port].flat().map(String);
  const samePort = row?.port == null || ports.includes(String(row.port));
  return rows.state?.pid != null && String(rows.state.pid) === String(row?.pid) && samePort;
}

/** Whether the probe can ask `client`: it needs two connections of the pool at once (see `losesPreparedStatements`). */
export function probeable(client: PostgresJsClient): boolean {
  return Number(client.options.max) >= 2;
}

/**
 * How many times the probe tries to have its connection moved to another server connection: on a direct connection
 * every round learns nothing, so few; once a pooler showed itself, more, as a round in which the second connection
 * did not get the first's backend (another client took it) learns nothing at the cost of a few round trips.
 */
const PROBE_ROUNDS = { unseen: 3, pooled: 6 };

/**
 * How long the probe's first connection waits for a server connection of its own while the second holds the one it
 * prepared on: as long as a pooler may take to open one (a backend to start, under load), well inside `PROBE_WAIT_MS`.
 */
const MOVE_WAIT_MS = 500;

/**
 * Whether a transaction pooler between `client` and PostgreSQL loses the statements postgres.js prepares. On two
 * connections of the client's pool: the first prepares a statement (its text new, so only that server connection
 * has it); the second begins a transaction, which a transaction pooler gives the server connection just freed; the
 * first then runs its statement in a transaction, which the pooler must give another server connection. There
 * PostgreSQL says the statement is missing (a pooler that loses them: PgBouncer before 1.21 or without
 * `max_prepared_statements`, Supavisor), or runs it (one that prepares them again: PgBouncer 1.21+ as Neon sets it
 * up). A direct connection, or a session pooler, keeps each connection on one backend of its own, so it is never
 * refused.
 *
 * A round in which the first ran on its server connection again learned nothing, and "nothing learned" is never
 * read as "no pooler" once one showed itself (two connections on one backend, or a connection that changed
 * backends; `sawPooler` is told at once): another round is tried, and where the second held the first's very backend
 * and the pooler still could not move the first, the pool is too busy (`PoolCrowded`, asked again later). Rounds in
 * which no pooler showed itself are a direct connection, a session pooler, or a pooler whose traffic took every
 * freed server connection first; a sign after has it asked again (see `afterPoolerSign`).
 */
export async function losesPreparedStatements(
  client: PostgresJsClient,
  secondWaitMs: number,
  sawPooler: () => void,
): Promise<boolean> {
  // One connection cannot be moved off its server by the probe, and a serverless function's pool is one.
  if (!probeable(client)) return false;
  const first = await client.reserve();
  try {
    const pending = client.reserve();
    const reserved = await settlesWithin(pending, secondWaitMs);
    if (!reserved) {
      Promise.resolve(pending).then(
        (late) => late.release(),
        () => {},
      );
      throw new PoolCrowded();
    }
    const second = reserved.value;
    const backends = { first: new Set<string>(), second: new Set<string>() };
    try {
      let pooled = false;
      for (let round = 0; round < (pooled ? PROBE_ROUNDS.pooled : PROBE_ROUNDS.unseen); round++) {
        const probe = `select pg_backend_pid() as pid /* idemkit: pooler probe ${crypto.randomUUID()} */`;
        const prepared = { prepare: true, simple: false };
        const [where] = (await first.unsafe(probe, [], prepared)) as { pid: number }[];
        await second.unsafe("begin");
        const [held] = (await second.unsafe("select pg_backend_pid() as pid")) as { pid: number }[];
        backends.first.add(String(where?.pid));
        backends.second.add(String(held?.pid));
        const shared = String(held?.pid) === String(where?.pid);
        // Sent now (postgres.js sends a statement once it is awaited), while the second holds its backend: a pooler
        // that has another free gives the first that one. Where the second holds the very backend the statement was
        // prepared on, the pooler must give the first another or make it wait, so it is given the time to open one;
        // past that the second lets its backend go (no deadlock), and the round learned nothing.
        const began = Promise.resolve(first.unsafe("begin"));
        if (shared) await settlesWithin(began, MOVE_WAIT_MS);
        await second.unsafe("rollback");
        await began;
        try {
          const [ran] = (await first.unsafe(probe, [], prepared)) as { pid: number }[];
          if (String(ran?.pid) !== String(where?.pid)) return false;
        } catch (error) {
          if (isPreparedStatementLost(error)) return true;
          throw error;
        } finally {
          await first.unsafe("rollback");
        }
        pooled = shared || backends.first.size > 1 || backends.second.size > 1;
        if (pooled) sawPooler();
        if (shared) throw new PoolCrowded();
      }
      if (pooled) throw new PoolCrowded();
      return false;
    } catch (error) {
      // Either connection may be left in a transaction by a failure part-way (postgres.js 3 would hand it back to
      // the app's pool as it is, and the app's writes on it would be lost with that transaction).
      await Promise.all(
        [first.unsafe("rollback"), second.unsafe("rollback")].map((sent) => Promise.resolve(sent).catch(() => {})),
      );
      throw error;
    } finally {
      second.release();
    }
  } finally {
    first.release();
  }
}

/** `promise`'s value if it settles within `ms` (its rejection, thrown), else undefined: it goes on meanwhile. */
export async function settlesWithin<T>(promise: PromiseLike<T>, ms: number): Promise<{ value: T } | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const elapsed = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
    (timer as { unref?: () => void }).unref?.();
  });
  try {
    return await Promise.race([Promise.resolve(promise).then((value) => ({ value })), elapsed]);
  } finally {
    clearTimeout(timer);
  }
}
