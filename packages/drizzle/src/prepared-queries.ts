/**
 * Where Drizzle's prepared queries of idemkit's statements are kept, so that each is built and rendered once:
 * Drizzle renders a statement anew every time it is prepared, which costs more than sending it.
 *
 * - On a database a store, relay or `processOnce` runs on (`registerDatabase`): kept for it, run again with other values,
 *   as Drizzle's prepared queries are meant to be.
 * - In a transaction, which is new each time: kept by the Drizzle instance's session options (one object per
 *   `drizzle()` call, which its transactions' sessions share), and handed to the instance's next transaction on its
 *   own connection, as Drizzle's session hands its own client to the transactions it begins. Rendering was most of what
 *   sending them cost: a first execution in atomic mode took 14% less of the app's CPU (`npm run bench:against`).
 *   Only a prepared query that sends through the `client` of the session it was made on (drizzle-orm 0.x's, on every
 *   driver) is kept, so that one made otherwise is never sent on a connection not its transaction's: it is then
 *   prepared anew each time. drizzle-orm 1.0's release candidates make a prepared query that closes over its
 *   session (no `client` of its own), so there each transaction's statements are still rendered.
 */
import type { Executor, Row } from "./database.js";
import { primaryOf } from "./drizzle-session.js";
import { isObject, seeDatabase } from "./named-databases.js";
import { unfenced } from "./transaction-fence.js";

/** A statement as Drizzle prepared it on one database or transaction: run again with other values. */
export interface Prepared {
  execute(values: Record<string, unknown>): PromiseLike<Row[]>;
}

/** By database, then by statement (weakly: a statement made for one call, the relay's retry and purge, goes with it). */
const onDatabases = new WeakMap<object, WeakMap<object, Prepared>>();
/** By the session options of a Drizzle instance, then by statement: see the file's comment. */
const inTransactions = new WeakMap<object, WeakMap<object, Prepared>>();

/**
 * Makes `db` (a database, never a transaction) one idemkit runs its statements on: `run` keeps the statements it
 * prepares there and sends one again, unprepared, when a pooler lost it (see `isDatabase`), and its transactions
 * are known by it (see `seeDatabase`).
 */
export function registerDatabase(db: Executor): void {
  seeDatabase(db);
  if (!onDatabases.has(db)) onDatabases.set(db, new WeakMap());
}

/** Whether `executor` is a database given to `registerDatabase`, not a transaction. */
export function isDatabase(executor: Executor): boolean {
  return onDatabases.has(executor);
}

/** `statement` as prepared before on `executor`, or in an earlier transaction of its Drizzle instance. */
export function keptPrepared(executor: Executor, statement: object): Prepared | undefined {
  const onDatabase = onDatabases.get(executor);
  if (onDatabase) return onDatabase.get(statement);
  const session = sessionOf(executor);
  const earlier = session && inTransactions.get(session.options)?.get(statement);
  return earlier && session ? (Object.create(earlier, { client: { value: session.client } }) as Prepared) : undefined;
}

/** Keeps `prepared`, `statement` as Drizzle prepared it on `executor`, for `keptPrepared`. */
export function keepPrepared(executor: Executor, statement: object, prepared: Prepared): void {
  const onDatabase = onDatabases.get(executor);
  if (onDatabase) {
    onDatabase.set(statement, prepared);
    return;
  }
  const session = sessionOf(executor);
  if (!session || (prepared as { client?: unknown }).client !== session.client) return;
  let byStatement = inTransactions.get(session.options);
  if (!byStatement) {
    byStatement = new WeakMap();
    inTransactions.set(session.options, byStatement);
  }
  byStatement.set(statement, prepared);
}

/** The driver client and session options of the transaction (or database) behind `executor`, where it has both. */
function sessionOf(executor: Executor): { client: object; options: object } | undefined {
  const { session } = unfenced(primaryOf(executor)) as { session?: { client?: unknown; options?: unknown } };
  const { client, options } = session ?? {};
  return isObject(client) && isObject(options) ? { client, options } : undefined;
}
