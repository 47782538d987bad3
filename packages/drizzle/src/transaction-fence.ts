/**
 * Statements through an idempotent transaction after it is over. A procedure can outlive its transaction: the
 * engine stopped waiting for it (a deadline passed), or the driver gave the transaction up when its connection
 * died. If it then goes on writing through `tx`, the statements reach a connection that is no longer in that
 * transaction: node-postgres sends them behind its ROLLBACK and then on a pooled client, postgres.js on the
 * connection it has handed back to the pool. There they commit one by one, outside the transaction that was to
 * undo them, and a request answered "nothing was kept" would have kept something. So they are refused:
 *
 *   open ──callback ended──▶ closing: only the driver's own COMMIT or ROLLBACK ──driver settled──▶ closed: nothing
 *
 * Savepoints (`tx.transaction`) are fenced the same way. node-postgres on a single `Client` runs its transaction on
 * the database's own session, shared with every other statement of the app, so nothing can be told apart there:
 * use a `Pool` (a single Client also mixes concurrent requests into one transaction).
 */

/** What a fence needs of a Drizzle transaction: its session (every statement goes through it) and savepoints. */
interface FencedTransaction {
  readonly _: { readonly session: object };
  transaction: unknown;
}

export interface TransactionFence {
  /** The transaction's callback has ended: only the driver's own COMMIT or ROLLBACK may still go through. */
  closing(): void;
  /** The driver has ended the transaction: every statement through it is refused. */
  close(): void;
}

/** What drizzle sends after the callback on drivers that end a transaction through its session (node-postgres). */
const ENDINGS = new Set(["commit", "rollback"]);

const UNFENCED: TransactionFence = { closing() {}, close() {} };

/** Fences `tx`, a transaction opened on the database whose session is `databaseSession`. */
export function fenceTransaction(tx: FencedTransaction, databaseSession: object): TransactionFence {
  if (tx._.session === databaseSession) return UNFENCED;
  let state: "open" | "closing" | "closed" = "open";
  const patchedSessions = new WeakSet<object>();

  function refusal(): Error {
    return new Error(
      "idemkit: this idempotent transaction is over (committed, rolled back or timed out), so this statement " +
        "would run outside it; nothing more can be written through it.",
    );
  }

  function fence(target: FencedTransaction): void {
    const session = target._.session as { prepareQuery: (query: { sql: string }, ...rest: unknown[]) => unknown };
    if (!patchedSessions.has(session)) {
      patchedSessions.add(session);
      const prepareQuery = session.prepareQuery;
      session.prepareQuery = function prepareQueryWhileOpen(this: unknown, query, ...rest) {
        if (state === "closed" || (state === "closing" && !ENDINGS.has(query.sql.trim().toLowerCase()))) {
          throw refusal();
        }
        return prepareQuery.call(this, query, ...rest);
      };
    }
    const transaction = target.transaction as (
      work: (nested: FencedTransaction) => unknown,
      ...rest: unknown[]
    ) => unknown;
    target.transaction = (work: (nested: FencedTransaction) => unknown, ...rest: unknown[]) => {
      if (state !== "open") return Promise.reject(refusal());
      return transaction.call(
        target,
        (nested: FencedTransaction) => {
          fence(nested);
          return work(nested);
        },
        ...rest,
      );
    };
  }

  fence(tx);
  return {
    closing() {
      if (state === "open") state = "closing";
    },
    close() {
      state = "closed";
    },
  };
}
