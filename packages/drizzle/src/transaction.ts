/**
 * `db.transaction` for idemkit's own transactions, safe on a connection that dies under them.
 *
 * postgres.js 3.4.9 gives a transaction up as soon as its connection closes (the transaction's promise rejects), while
 * the callback still runs. When the callback then settles, postgres.js sends ROLLBACK or COMMIT on that connection,
 * which has no socket any more: the write it schedules throws an uncaught `TypeError: Cannot read properties of null
 * (reading 'write')` (porsager/postgres#1208), the statement never settles, and the connection keeps a stale write
 * buffer that stalls every reconnection after it (each waits out `connect_timeout`) until enough of them piled up
 * to be flushed as garbage: tens of seconds of 503s after the database is back.
 *
 * So a callback whose transaction the driver already gave up never settles: nothing is sent on the dead connection,
 * and the callback's closures are collected with it, as nothing waits for them any more. On the other drivers the
 * transaction's promise never settles before its callback, so this changes nothing there. Statements the callback
 * sends after that are refused by the fence: postgres.js would run them on the reconnected connection, outside any
 * transaction, and commit them one by one.
 */

import type { AnyPgDatabase, Executor } from "./database.js";
import { driverOf } from "./driver.js";
import { againIfConnectionLost, isPreparedStatementLost } from "./driver-errors.js";
import { fenceTransaction, type TransactionFence } from "./transaction-fence.js";

/** The next turn of the event loop: right after I/O callbacks on Node, else the next task. */
const nextTurn: (callback: () => void) => void =
  typeof setImmediate === "function" ? (callback) => setImmediate(callback) : (callback) => setTimeout(callback, 0);

/** The transaction type that `db.transaction` hands its callback: what the procedure writes with. */
export type TransactionOf<TDb extends AnyPgDatabase> = Parameters<Parameters<TDb["transaction"]>[0]>[0];

/**
 * Runs `work` in a transaction of `db`: its statements fenced in (none goes through once the transaction is over,
 * see `transaction-fence.ts`; `own` is the same transaction for idemkit's own statements, fenced at less cost),
 * and the driver never left to write on a connection that died under it. A transaction whose connection was lost
 * before `work` began is begun again (see `againIfConnectionLost`): after a restart, postgres.js fails the first
 * statement on each reconnected connection with the error that ended it. So is one whose `work` threw
 * `StatementLostBeforeWork`: its first statements (the claim) leave with BEGIN, so they meet a lost connection
 * first.
 */
export async function transactionOf<TDb extends AnyPgDatabase, T>(
  db: TDb,
  work: (tx: TransactionOf<TDb>, own: Executor) => Promise<T>,
): Promise<T> {
  try {
    return await transactionOnce(db, work);
  } catch (error) {
    if (!(error instanceof StatementLostBeforeWork)) throw error;
    if (!isPreparedStatementLost(error.cause)) throw error.cause;
    // Nothing of it ran: begun once more, with idemkit's statements now unnamed.
    return await transactionOnce(db, work).catch((again: unknown) => {
      throw again instanceof StatementLostBeforeWork ? again.cause : again;
    });
  }
}

/**
 * What `work` throws when one of idemkit's statements failed before anything of the caller's ran: its connection
 * was lost, or a transaction pooler lost its prepared name (see `run` in statements.ts). `transactionOf` begins the
 * transaction again.
 */
export class StatementLostBeforeWork extends Error {
  constructor(override readonly cause: unknown) {
    super("A statement was lost before the transaction's work began", { cause });
  }
}

function transactionOnce<TDb extends AnyPgDatabase, T>(
  db: TDb,
  work: (tx: TransactionOf<TDb>, own: Executor) => Promise<T>,
): Promise<T> {
  return againIfConnectionLost(() => {
    let began = false;
    return attempt(db, (tx, own) => {
      began = true;
      return work(tx, own);
    }).catch((error: unknown) => {
      throw began && !(error instanceof StatementLostBeforeWork) ? new Begun(error) : error;
    });
  }).catch((error: unknown) => {
    throw error instanceof Begun ? error.error : error;
  });
}

/** A failure after `work` began: never begun again, whatever it was. */
class Begun {
  constructor(readonly error: unknown) {}
}

function attempt<TDb extends AnyPgDatabase, T>(
  db: TDb,
  work: (tx: TransactionOf<TDb>, own: Executor) => Promise<T>,
): Promise<T> {
  let givenUp = false;
  let fence: TransactionFence<TransactionOf<TDb>> | undefined;
  const transaction = driverOf(db).transaction(async (tx) => {
    const current = fenceTransaction(tx as TransactionOf<TDb>);
    fence = current;
    let value: T;
    try {
      value = await work(current.tx, current.own);
    } catch (error) {
      current.close();
      // A statement that failed because the connection closed may be seen here before the driver's own rejection of
      // the transaction: both were set off by the same event, so once the event loop moves on the driver has spoken.
      await new Promise<void>((resolve) => nextTurn(resolve));
      if (givenUp) return givenUpForGood<T>();
      throw error;
    }
    current.close();
    return givenUp ? givenUpForGood<T>() : value;
  }) as Promise<T>;
  transaction.catch(() => {
    givenUp = true;
  });
  return transaction.finally(() => fence?.close());
}

/**
 * What the callback is left with once its transaction was given up: a promise that never settles, and that nothing
 * else holds, so that it is collected with the callback (one shared among them all would keep every one alive).
 */
function givenUpForGood<T>(): Promise<T> {
  return new Promise<T>(() => {});
}
