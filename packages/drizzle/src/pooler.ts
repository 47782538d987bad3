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
import {
  losesPreparedStatements,
  PoolCrowded,
  probeable,
  reachesPostgresDirectly,
  settlesWithin,
} from "./pooler-questions.js";
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

function verdictOf(client: PostgresJsClient): Verdict {
  let verdict = verdicts.get(client);
  if (!verdict) {
    verdict = { crowded: 0 };
    verdicts.set(client, verdict);
  }
  return verdict;
}

/**
 * Resolves once idemkit's calls may run on `db`, as far as a transaction pooler goes (`PoolerPolicy.checked`).
 * Rejects with STORE_MISCONFIGURED when `db` is postgres.js with `prepare` on behind a pooler that loses prepared
 * statements: asked once per client, at idemkit's first call on it, before anything of that call runs (asked again
 * by later calls, in the background, when the pool had no second connection free then); with STORE_UNAVAILABLE
 * while a pooler showed itself and no probe could yet say whether it loses them. Every other database passes at
 * once.
 */
export async function poolerChecked(db: object): Promise<void> {
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
