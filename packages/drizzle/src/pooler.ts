/**
 * postgres.js with its default `prepare: true` behind a transaction pooler (PgBouncer, Supabase's Supavisor, Neon's
 * pooled URL, without prepared statements): it prepares every statement, COMMIT included, on its own connection,
 * and the pooler hands the next transaction to a server connection that never saw them. PostgreSQL refuses the
 * COMMIT as a missing statement, which aborts the transaction; postgres.js sends it again, and PostgreSQL answers
 * a COMMIT in an aborted transaction with ROLLBACK, which postgres.js 3 reports as success. Measured on PgBouncer
 * 1.18: 8 and 9 of 60 plain transactions on postgres.js 3.4.9, in two runs, reported committed and not there; and
 * its pool wedges there (52 to 65 of 80 plain statements on two pools unanswered after 10 s).
 *
 * So such a database is refused (STORE_MISCONFIGURED naming `prepare: false`) from idemkit's first call on it: a
 * probe asks before anything runs, first whether a connection reaches PostgreSQL itself (one statement: see
 * `reachesPostgresDirectly`), else whether the pooler loses statements (see `losesPreparedStatements`). A pool too
 * busy to lend it two connections then is asked again, in the background, by later calls; once a pooler showed
 * itself, every call waits for a probe of its own and is refused retryably (STORE_UNAVAILABLE) until one answers. Any
 * later sign (a statement PostgreSQL says is missing, a COMMIT reported done that kept nothing) has it asked again
 * (see `afterPoolerSign`).
 */
import { IdempotencyError, IdempotencyErrorCode } from "@idemkit/core";
import { onceLog } from "@idemkit/core/internal";
import { isPreparedStatementLost } from "./driver-errors.js";
import { type PostgresJsClient, postgresJsClient } from "./postgres-js.js";

/** The refusal for such a database once a pooler showed itself: the fix is one option. */
export function poolerNeedsUnpreparedStatements(detail: string, cause?: unknown): IdempotencyError {
  return new IdempotencyError(
    IdempotencyErrorCode.STORE_MISCONFIGURED,
    `${detail} This database is behind a transaction pooler (PgBouncer, Supabase's or Neon's pooled URL), and ` +
      "postgres.js prepares every statement on its own connection, COMMIT included, which the pooler's next server " +
      "connection does not have: a COMMIT can then be rolled back and still reported done. Connect with " +
      "postgres(url, { prepare: false }), or through the database's direct URL.",
    { cause },
  );
}

/** What is known of one postgres.js client with `prepare` on. */
interface Verdict {
  /** Set once a pooler was seen losing its statements: every call of idemkit's on the client is refused. */
  refusal?: IdempotencyError;
  /** The probe under way; unset once it failed, to be asked again by the next call. */
  probe?: Promise<void> | undefined;
  /** The probe answered: there is no asking again. */
  answered?: boolean;
  /** A call outlasted `PROBE_WAIT_MS` waiting for the probe: the calls after it go on without waiting. */
  unwaited?: boolean;
  /** How many probes found no second connection of the pool free in time. */
  crowded: number;
  /**
   * A probe saw a transaction pooler (two connections on one backend, or one that changed backends), set as soon as
   * it does. From then on nothing runs until a probe says whether the pooler loses statements.
   */
  pooled?: boolean;
  /**
   * A connection of the client was proved to reach PostgreSQL itself (see `reachesPostgresDirectly`): no pooler is in
   * between, so a sign is the app's own doing (a connection reset), asked again on a pool of any size.
   */
  direct?: boolean;
}

const verdicts = new WeakMap<object, Verdict>();

/**
 * How long a call waits for the probe, and the probe for its second connection (a pool busy with the app's own work,
 * or a transaction of the app's that waits on this call while holding the other connection). Past it the call goes
 * on (refused retryably once a pooler showed itself), and the probe's answer, when it comes, still refuses the calls
 * after it.
 */
const PROBE_WAIT_MS = 2_000;

/**
 * How many probes in all a pool too busy to lend the probe a second connection gets, while no pooler showed itself:
 * the first call's, then one each at later calls, which start it once they have taken their own connection and do
 * not wait for it; past that a sign refuses it (see `afterPoolerSign`).
 */
const CROWDED_PROBES = 3;

/**
 * How long a later probe waits for its second connection: it holds one of the app's while it waits, so on a pool
 * that is still busy it gives up soon, and the calls queued behind it are held up no longer than that.
 */
const LATER_PROBE_WAIT_MS = 100;

/**
 * The probe found every other connection of the pool taken, or the pooler's every other server connection: it asks
 * again later.
 */
class PoolCrowded extends Error {
  constructor() {
    super("The pool had no connection free for the pooler probe.");
  }
}

function verdictOf(client: PostgresJsClient): Verdict {
  let verdict = verdicts.get(client);
  if (!verdict) {
    verdict = { crowded: 0 };
    verdicts.set(client, verdict);
  }
  return verdict;
}

/**
 * Throws STORE_MISCONFIGURED when `db` is postgres.js with `prepare` on behind a pooler that loses prepared
 * statements: asked once per client, at idemkit's first call on it, before anything of that call runs (asked again
 * by later calls, in the background, when the pool had no second connection free then). Throws STORE_UNAVAILABLE
 * while a pooler showed itself and no probe could yet say whether it loses them. Every other database passes at
 * once.
 */
export async function refuseBehindPooler(db: object): Promise<void> {
  const client = postgresJsClient(db);
  if (client?.options.prepare !== true) return;
  const verdict = verdictOf(client);
  if (!verdict.refusal && !verdict.answered) {
    if (!verdict.probe && verdict.crowded > 0 && !verdict.pooled) {
      // Asked again once this call has queued its own statement, so that the probe never takes its connection first.
      if (verdict.crowded < CROWDED_PROBES) {
        verdict.probe = afterThisTurn().then(() => probe(client, verdict, LATER_PROBE_WAIT_MS));
      }
    } else {
      verdict.probe ??= probe(client, verdict, PROBE_WAIT_MS);
      if (!verdict.unwaited && !(await settlesWithin(verdict.probe, PROBE_WAIT_MS))) verdict.unwaited = true;
    }
  }
  if (verdict.refusal) throw verdict.refusal;
  // Behind a transaction pooler that may lose postgres.js's statements, a COMMIT it loses is reported done: this call
  // is refused, to be sent again once the next call's probe (which it waits for, as the first did) has answered.
  if (verdict.pooled && !verdict.answered) {
    throw new IdempotencyError(
      IdempotencyErrorCode.STORE_UNAVAILABLE,
      "A transaction pooler is between this app and PostgreSQL, and whether it keeps the statements postgres.js " +
        "prepares could not be checked yet (its pool was busy); nothing was run. Retry; to need no check, connect " +
        "with postgres(url, { prepare: false }).",
      { retryAfterMs: 1_000 },
    );
  }
}

/**
 * Whether `db`'s connections were proved to reach PostgreSQL itself (see `reachesPostgresDirectly`), so that a
 * session is the connection's own and holds only what it prepared; false while unasked, and once a sign asks again.
 */
export function provedDirect(db: object): boolean {
  const client = postgresJsClient(db);
  return client !== undefined && verdicts.get(client)?.direct === true;
}

/** Starts a probe of `client` whose answer goes to `verdict`; it never rejects. */
function probe(client: PostgresJsClient, verdict: Verdict, secondWaitMs: number): Promise<void> {
  const sawPooler = () => {
    verdict.pooled = true;
  };
  const asked = reachesPostgresDirectly(client).then((direct) => {
    verdict.direct = direct;
    return !direct && losesPreparedStatements(client, secondWaitMs, sawPooler);
  });
  return asked.then(
    (lost) => {
      verdict.answered = true;
      // A pooler that keeps prepared statements: a later sign is asked again, as on a direct connection.
      if (!lost) verdict.pooled = false;
      if (lost) {
        verdict.refusal ??= poolerNeedsUnpreparedStatements(
          "A statement that postgres.js prepared was missing on the pooler's next server connection.",
        );
      }
    },
    (error: unknown) => {
      verdict.probe = undefined;
      if (error instanceof PoolCrowded) verdict.crowded++;
      // The database did not answer it (down, or not there yet): the next call asks again, and waits for it.
      else verdict.unwaited = false;
    },
  );
}

/**
 * Settles after the current turn of the event loop: with setImmediate where there is one (Node.js, Bun, Deno), after
 * the I/O callbacks of this turn, in which a call queues its statement.
 */
function afterThisTurn(): Promise<void> {
  const schedule = globalThis.setImmediate ?? ((run: () => void) => setTimeout(run, 0));
  return new Promise((resolve) => schedule(() => resolve()));
}

/**
 * What a call on `db` is answered with once one of its prepared statements was lost, or a COMMIT reported done kept
 * nothing (`detail` says which). That is a sign, not a verdict: an app's own `DEALLOCATE ALL` or `DISCARD ALL` on a
 * direct connection loses prepared statements too, and refusing every call for it would be an outage. So where the
 * probe can ask (a pool of two or more), the question is asked again, by the next call, which waits for it as the
 * first did, and this call fails as it is (nothing of it was kept; the engine answers so, and a retry is safe).
 * Where it cannot (a pool of one not proved direct, a pool too busy for every probe it had), where a probe already
 * saw a transaction pooler that it has not seen keep statements (a sign there is no app's doing), or once a probe
 * said so, the refusal is kept for every call after it, in every mode.
 */
export function afterPoolerSign(db: object, detail: string, cause?: unknown): unknown {
  const refusal = poolerNeedsUnpreparedStatements(detail, cause);
  const client = postgresJsClient(db);
  if (!client) return refusal;
  const verdict = verdictOf(client);
  if (verdict.refusal) return verdict.refusal;
  // A connection proved direct rules a pooler out: the app's own doing (a connection reset), asked again all the same.
  if (!verdict.direct && (!probeable(client) || verdict.crowded >= CROWDED_PROBES || verdict.pooled)) {
    verdict.refusal = refusal;
    return refusal;
  }
  if (verdict.answered) Object.assign(verdict, { answered: false, probe: undefined, unwaited: false, direct: false });
  const asked = `${detail} If a transaction pooler is in between (PgBouncer, Supabase's or Neon's pooled URL), connect with postgres(url, { prepare: false }); idemkit asks again whether one is.`;
  signsLog(asked);
  return cause ?? new Error(asked);
}

/** What the operator is told of a sign that did not refuse: once per distinct sign, for the process. */
const signsLog = onceLog();

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
async function reachesPostgresDirectly(client: PostgresJsClient): Promise<boolean> {
  const rows = (await client.unsafe("select pg_backend_pid() as pid, inet_server_port() as port", [], {
    simple: true,
  })) as { pid?: unknown; port?: unknown }[] & { state?: { pid?: unknown } };
  const [row] = rows;
  const ports = [client.options.port].flat().map(String);
  const samePort = row?.port == null || ports.includes(String(row.port));
  return rows.state?.pid != null && String(rows.state.pid) === String(row?.pid) && samePort;
}

/** Whether the probe can ask `client`: it needs two connections of the pool at once (see `losesPreparedStatements`). */
function probeable(client: PostgresJsClient): boolean {
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
async function losesPreparedStatements(
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
async function settlesWithin<T>(promise: PromiseLike<T>, ms: number): Promise<{ value: T } | undefined> {
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
