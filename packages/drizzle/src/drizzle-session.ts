/**
 * Drizzle's session under a database: what begins its transactions. From drizzle-orm 0.41 to 1.0's release
 * candidates, a postgres.js or node-postgres database's session (`db.session`, in no public type) begins one on its
 * `client` (postgres.js's `begin`, a node-postgres pool's `connect`), and builds the transaction the callback gets from
 * its own dialect, schema and options. So a transaction begun through the session with another client is Drizzle's
 * own in every other way: its type, its nesting, the database's logger and casing. Where a session is not so, the
 * driver keeps `db.transaction`.
 */

/** The part of Drizzle's session that begins transactions. */
interface DrizzleSession {
  client: unknown;
  transaction(work: (tx: unknown) => Promise<unknown>): Promise<unknown>;
}

/** The database Drizzle runs a statement or transaction on: the primary of one made with `withReplicas`. */
export function primaryOf(db: object): object {
  return (db as { $primary?: object }).$primary ?? db;
}

/** `db`'s session, when it begins its transactions on `client`; else undefined. */
export function sessionOn(db: object, client: unknown): DrizzleSession | undefined {
  const session = (primaryOf(db) as { session?: Partial<DrizzleSession> }).session;
  return typeof session?.transaction === "function" && session.client === client
    ? (session as DrizzleSession)
    : undefined;
}

/** Runs `work` in a transaction `session` begins as it always does, but on `client` (see the file's comment). */
export function transactionOn<T>(
  session: DrizzleSession,
  client: object,
  work: (tx: unknown) => Promise<T>,
): Promise<T> {
  return Object.create(session, { client: { value: client } }).transaction(work) as Promise<T>;
}

/**
 * `answer`, a statement's, settled once BEGIN's (`begun`) is in too: with BEGIN's failure if BEGIN failed, so that
 * nothing sent behind a failed BEGIN (and run on its own) is taken for part of a transaction. Never before its own
 * answer: once the transaction's last statement is answered, every statement before it was, and the connection can go
 * back to its pool.
 */
export function afterBegin<T>(answer: PromiseLike<T>, begun: PromiseLike<unknown>): Promise<T> {
  return Promise.resolve(answer).then(
    (result) => Promise.resolve(begun).then(() => result),
    (error: unknown) =>
      Promise.resolve(begun).then(() => {
        throw error;
      }),
  );
}
