/**
 * On which databases idemkit prepares its statements by name, decided per database and never for the process.
 *
 * A transaction pooler (PgBouncer, Supabase's Supavisor, Neon's) hands each transaction, and each statement outside
 * one, to whichever server connection is free, so a statement prepared by name on one is missing on the next (or
 * there already, from another client). The first time PostgreSQL says so on a database, or from the first where its
 * driver prepares nothing (`Transactions.prefersLiterals`), that database's statements are sent unprepared from then
 * on (see `unprepared` in statements.ts); every other database keeps its names, which cost less: an atomic first
 * execution takes 2.5 times as much CPU unprepared on node-postgres (743 against 1,868 µs, a direct connection on
 * one machine).
 */
import type { AnyPgDatabase, Executor } from "./database.js";
import { driverOf } from "./driver.js";
import { primaryOf } from "./drizzle-session.js";
import { unfenced } from "./transaction-fence.js";

/** The databases whose statements go unprepared, each by its driver's client (see `databaseOf`). */
const unnamed = new WeakSet<object>();

/** The client of each database seen, by its session options: see `databaseOf`. */
const clientsByOptions = new WeakMap<object, object>();

/**
 * The database behind `executor`, by its driver's client (`db.$client`: a pool, postgres.js's `sql`, a PGlite), which
 * every Drizzle instance made over it shares, so that a database made per request learns with the others. A
 * transaction has no `$client`: it is found by Drizzle's session options, one object per `drizzle()` call that each of
 * its transactions' sessions is given (drizzle-orm 0.41 to 1.0's release candidates), remembered when its database was
 * seen (`seeDatabase`: a store, a relay, `processOnce`). Undefined for a transaction of a database never seen:
 * idemkit cannot know whether a pooler loses names there. Read behind a transaction's fence, whose every object is a
 * stand-in.
 */
export function databaseOf(executor: Executor): object | undefined {
  const database = unfenced(primaryOf(executor)) as { $client?: unknown; session?: { options?: unknown } };
  const options = isObject(database.session?.options) ? (database.session?.options as object) : undefined;
  const client = isObject(database.$client) ? database.$client : undefined;
  if (client && options) clientsByOptions.set(options, client);
  return client ?? (options && clientsByOptions.get(options));
}

/**
 * Makes `db` (a database, never a transaction) known, so that its transactions are found by it; where its driver
 * prepares nothing, its statements go unprepared from the first.
 */
export function seeDatabase(db: Executor): void {
  const database = databaseOf(db);
  if (database && driverOf(db as AnyPgDatabase).prefersLiterals) unnamed.add(database);
}

/** Whether statements on `database` (see `databaseOf`) are prepared by name: never on an unknown one. */
export function namesStatements(database: object | undefined): database is object {
  return database !== undefined && !unnamed.has(database);
}

/** Sends `database`'s statements unprepared from now on: a pooler lost one of its names. */
export function stopNaming(database: object): void {
  unnamed.add(database);
}

/** Whether `value` can key a WeakMap. */
export function isObject(value: unknown): value is object {
  return (typeof value === "object" || typeof value === "function") && value !== null;
}
