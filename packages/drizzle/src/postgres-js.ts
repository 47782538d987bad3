/**
 * postgres.js (3.4 and 4) under a Drizzle database: which client it is, and how idemkit's transactions run on it.
 *
 * postgres.js's own `sql.begin` waits for BEGIN's answer before its callback sends anything (and on 3 prepares its
 * COMMIT, which a transaction pooler loses, and which 3 then reports done when PostgreSQL answered ROLLBACK). So on
 * postgres.js 4 idemkit begins its transactions itself, on a connection of the pool it reserves, and hands Drizzle
 * that connection to build the transaction the procedure gets (Drizzle's own, nesting through savepoints):
 *
 *   BEGIN ┐ one flight: the claim is sent before BEGIN is answered, and its answer read only with BEGIN's
 *   claim ┘
 *   …the procedure's statements…
 *   completion ┐ one flight: COMMIT is sent right behind the completion, before its answer
 *   COMMIT     ┘ ─▶ COMMIT's own answer: a transaction PostgreSQL rolled back instead is thrown, never reported kept
 *
 * BEGIN and COMMIT go unprepared, so no pooler can lose them. No statement of the transaction is answered before
 * BEGIN's answer is in: where BEGIN failed (a pooler in statement mode refuses it), what was sent behind it ran on
 * its own, and its caller is told BEGIN's failure instead of its rows, so nothing of the procedure ever runs
 * outside the transaction. A prepared claim may then have been kept on its own: its record stands in progress until
 * its lease ends, as a crashed lease-mode call's does. A claim sent as text carries its savepoint (see `Trailing` in
 * statements.ts), which PostgreSQL refuses outside a transaction, and so keeps nothing.
 *
 * postgres.js 3 keeps its own `sql.begin`, which awaits BEGIN alone: its `reserve()` drops a reservation that waits
 * for a connection when a connection closes meanwhile (the pool reconnects that connection for the waiting
 * reservation, then hands it to no one), so a call waiting for its pool through a restart would never be answered.
 * With `prepare` on, its COMMIT is a prepared statement, and one PostgreSQL no longer holds (an app's own DISCARD
 * ALL; a pooler's other server connection) fails, aborting the transaction; postgres.js prepares it again and sends
 * it once more, and reports done the ROLLBACK PostgreSQL then answers. So the transaction's last statement asks
 * whether the session holds a prepared `commit` (`PREPARED_COMMIT_HELD`): postgres.js caches one statement per text
 * and connection, and prepares one again only by sending it again, so while the session holds one, it is the one
 * postgres.js sends. Where it does not (a connection's first transaction; the first after a DISCARD ALL), the
 * caller reads back what the COMMIT kept.
 */

import type { AnyPgDatabase, Transactions } from "./database.js";
import { afterBegin, primaryOf, sessionOn, transactionOn } from "./drizzle-session.js";

/** A statement of postgres.js, sent once it is awaited or executed. */
interface PostgresJsQuery extends PromiseLike<unknown> {
  /** Has the rows come back as arrays (what Drizzle reads them as). */
  values(): PostgresJsQuery;
  execute(): PostgresJsQuery;
}

/** Options of one statement. */
interface StatementOptions {
  prepare?: boolean;
  simple?: boolean;
}

/** A connection of the pool held by one caller (`sql.reserve()`, postgres.js 3.4 and 4). */
export interface ReservedConnection {
  unsafe(text: string, args?: unknown[], options?: StatementOptions): PostgresJsQuery;
  release(): void;
}

/** A postgres.js client (`sql`), as far as idemkit reads it. */
export interface PostgresJsClient {
  begin: unknown;
  options: { prepare?: unknown; max?: unknown; port?: unknown };
  reserve(): PromiseLike<ReservedConnection>;
  /** A statement on any connection of the pool; its rows carry `state`, the connection's BackendKeyData. */
  unsafe(text: string, args?: unknown[], options?: StatementOptions): PromiseLike<unknown>;
}

/** Whether `client` is postgres.js 3 (4's has `stats`). */
function isVersion3(client: PostgresJsClient): boolean {
  return !("stats" in client);
}

/** True while the session holds postgres.js 3's prepared COMMIT: see the file's comment. */
const PREPARED_COMMIT_HELD = "exists (select from pg_catalog.pg_prepared_statements where statement = 'commit')";

/** The driver of a Drizzle database on postgres.js: see the file's comment. */
export function postgresJsDriver(db: AnyPgDatabase, client: PostgresJsClient): Transactions {
  const prepares = client.options.prepare !== false;
  // `reserve`: idemkit's own transactions on postgres.js 4 begin on a reserved connection.
  const entrances = { client, methods: ["unsafe", "begin", "reserve"], oneConnection: client.options.max === 1 };
  const common = { prefersLiterals: !prepares, runsMultiStatementTexts: true, entrances };
  const session = sessionOn(db, client);
  if (session && !isVersion3(client)) {
    // What the session calls to begin a transaction: see the file's comment.
    const beginning = { begin: (scoped: (scope: Scope) => Promise<unknown>) => reservedTransaction(client, scoped) };
    return { ...common, transaction: (work) => transactionOn(session, beginning, work) };
  }
  return {
    ...common,
    transaction: (work) => db.transaction(work),
    commitProof: prepares ? PREPARED_COMMIT_HELD : undefined,
  };
}

/** The postgres.js client of `db`, or undefined on another driver. */
export function postgresJsClient(db: object): PostgresJsClient | undefined {
  const client = (primaryOf(db) as { $client?: unknown }).$client as Partial<PostgresJsClient> | undefined;
  return typeof client?.begin === "function" && client.options ? (client as PostgresJsClient) : undefined;
}

/** Statements that change nothing but the transaction's own state: never prepared, so no pooler loses them. */
const UNPREPARED = { prepare: false };

/**
 * What Drizzle's transaction sends its statements through: the reserved connection, for the transaction or for one
 * savepoint in it. As in postgres.js's own `sql.begin`, a statement that failed fails its scope even when the work
 * caught it: PostgreSQL would answer its COMMIT with ROLLBACK (or its savepoint could not be released).
 */
interface Scope {
  unsafe(text: string, args?: unknown[], options?: StatementOptions): PostgresJsQuery;
  savepoint(nested: (scope: Scope) => Promise<unknown>): Promise<unknown>;
  /** The first statement of this scope that failed. */
  failure?: { error: unknown };
  /**
   * The savepoint was rolled back: a statement sent through it now would run in the transaction around it, and be
   * committed with it. Refused, as postgres.js 4's own savepoints refuse it.
   */
  rolledBack?: true;
}

/**
 * The transaction on a reserved connection: see the file's comment. postgres.js 4 fails every statement of a lease
 * whose connection closed, so nothing here is sent on a dead connection, and the lease is handed back as closed.
 */
async function reservedTransaction(
  client: PostgresJsClient,
  scoped: (scope: Scope) => Promise<unknown>,
): Promise<unknown> {
  const reserved = await client.reserve();
  const begun = Promise.resolve(reserved.unsafe("begin", [], UNPREPARED).execute());
  begun.catch(() => {});
  let savepoints = 0;

  function scope(): Scope {
    const current: Scope = {
      unsafe(text, args, options) {
        if (current.rolledBack) {
          throw new Error(
            "idemkit: this savepoint (tx.transaction) was rolled back, so this statement would run outside it; " +
              "nothing more can be written through it.",
          );
        }
        return answeredAfter(reserved.unsafe(text, args, options), begun, (error) => {
          current.failure ??= { error };
        });
      },
      async savepoint(nested) {
        const name = `idemkit_s${savepoints++}`;
        await current.unsafe(`savepoint ${name}`, [], UNPREPARED);
        const inner = scope();
        try {
          const result = await nested(inner);
          if (inner.failure) throw inner.failure.error;
          return result;
        } catch (error) {
          inner.rolledBack = true;
          await current.unsafe(`rollback to savepoint ${name}`, [], UNPREPARED);
          throw error;
        }
      },
    };
    return current;
  }

  const outer = scope();
  try {
    const result = await scoped(outer);
    if (outer.failure) throw outer.failure.error;
    // Answered long since (its answer came before any statement's), but a work that awaited none would not know.
    await begun;
    const done = (await reserved.unsafe("commit", [], UNPREPARED)) as { command?: string };
    if (done.command !== "COMMIT") throw new TransactionRolledBack();
    return result;
  } catch (error) {
    await Promise.resolve(reserved.unsafe("rollback", [], UNPREPARED)).catch(() => {});
    throw error;
  } finally {
    reserved.release();
  }
}

/**
 * `query` as the scope's: answered only once BEGIN was (with BEGIN's failure, if it failed, so that nothing sent
 * behind a failed BEGIN is taken for part of the transaction), and its failure told to `failed`. Sent when awaited
 * or executed, as postgres.js's own are, so that Drizzle can ask for its rows as arrays first.
 */
function answeredAfter(
  query: PostgresJsQuery,
  begun: Promise<unknown>,
  failed: (error: unknown) => void,
): PostgresJsQuery {
  const answer = () =>
    afterBegin(query, begun).catch((error: unknown) => {
      failed(error);
      throw error;
    });
  const deferred: PostgresJsQuery = {
    values() {
      query.values();
      return deferred;
    },
    execute() {
      query.execute();
      return deferred;
    },
    // biome-ignore lint/suspicious/noThenProperty: Drizzle awaits it as the query it stands for
    then: (onFulfilled, onRejected) => answer().then(onFulfilled, onRejected),
  };
  return deferred;
}

/**
 * PostgreSQL answered the COMMIT with ROLLBACK: a statement of the transaction had failed, and nothing of it was
 * kept. Its SQLSTATE is PostgreSQL's for a failed transaction (25P02).
 */
export class TransactionRolledBack extends Error {
  readonly code = "25P02";
  constructor() {
    super("PostgreSQL rolled the transaction back instead of committing it: one of its statements had failed.");
  }
}
