/**
 * Statements that bypass the idempotent transaction. In atomic mode a protected procedure must write through the
 * transaction it is handed (`ctx.idempotency.tx`, or its own `ctx.db` with the middleware's `dbKey`). A statement
 * sent through the database handle itself instead asks for another connection:
 * - on a driver with a single connection (PGlite, a pool of one) that connection is the transaction's, so the
 *   statement waits for the transaction, which waits for the procedure, which waits for the statement: the
 *   request hangs, and every request after it. Such a statement fails at once here, with the fix in its message.
 * - on a pool it runs, but outside the transaction: a stored 4xx no longer undoes it, a released 5xx no longer
 *   rolls it back, a crash no longer erases it. Development builds warn once per procedure; production pays
 *   nothing for this check.
 *
 * "Inside the procedure" is the procedure's async context (AsyncLocalStorage), so other requests that use the
 * database meanwhile are never mistaken for it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { entityKind } from "drizzle-orm";

/** What a guarded session needs of a Drizzle database: its session, whose methods every statement goes through. */
interface GuardedDatabase {
  readonly _: { readonly session: object };
}

/** One idempotent transaction while its procedure runs. */
interface OpenTransaction {
  /** The session of the database the transaction was opened on: statements through it are bypasses. */
  readonly databaseSession: object;
  /** The protected procedure, for messages; set once its key is claimed. */
  path: string | undefined;
  open: boolean;
}

const current = new AsyncLocalStorage<OpenTransaction>();
/** Sessions whose methods already check for bypasses, so two stores on one database wrap it once. */
const watchedSessions = new WeakSet<object>();
/** Procedures already warned about, once each per process. */
const warnedPaths = new Set<string>();

export interface BypassGuard {
  /** Runs a procedure's work with statements through the database handle checked until it settles. */
  within<T>(transaction: GuardedDatabase, work: (opened: OpenTransaction) => Promise<T>): Promise<T>;
}

/**
 * A guard for the database `db`, or undefined when there is nothing to guard: a pool in production (no warning
 * to give), or a driver whose transaction shares the database's own session (node-postgres on a single
 * `Client`, where every statement is on the transaction's connection anyway).
 */
export function bypassGuard(db: GuardedDatabase): BypassGuard | undefined {
  const oneConnection = hasOneConnection(db._.session);
  const production = globalThis.process?.env?.NODE_ENV === "production";
  if (!oneConnection && production) return undefined;
  watch(db._.session, oneConnection);
  return {
    async within(transaction, work) {
      if (transaction._.session === db._.session) return work({ databaseSession: {}, path: undefined, open: true });
      const opened: OpenTransaction = { databaseSession: db._.session, path: undefined, open: true };
      try {
        return await current.run(opened, () => work(opened));
      } finally {
        opened.open = false;
      }
    },
  };
}

/** Makes every statement of `session` check whether it was sent from inside an idempotent transaction's procedure. */
function watch(session: object, oneConnection: boolean): void {
  if (watchedSessions.has(session)) return;
  watchedSessions.add(session);
  const methods = session as Record<string, unknown>;
  for (const name of ["prepareQuery", "transaction"]) {
    const original = methods[name];
    if (typeof original !== "function") continue;
    methods[name] = function checked(this: unknown, ...args: unknown[]) {
      const opened = current.getStore();
      if (opened?.open && opened.databaseSession === session) bypassed(opened, oneConnection);
      return original.apply(this, args);
    };
  }
}

function bypassed({ path = "A protected procedure" }: OpenTransaction, oneConnection: boolean): void {
  const fix =
    "Write through the transaction the middleware hands over: ctx.idempotency.tx, or name your context's " +
    'database in idempotency({ dbKey: "db" }) so that ctx.db is that transaction.';
  if (oneConnection) {
    throw new Error(
      `idemkit: ${path} sent a statement through the database itself while its idempotent transaction holds ` +
        `the only connection, so it would wait forever. ${fix}`,
    );
  }
  if (warnedPaths.has(path)) return;
  warnedPaths.add(path);
  console.warn(
    `idemkit: ${path} sent a statement through the database itself, outside its idempotent transaction: a ` +
      `stored error will not undo it, a retry may repeat it, and a crash will not erase it. ${fix}`,
  );
}

/** PGlite has one connection by nature; postgres.js and node-postgres pools may be sized to one. */
function hasOneConnection(session: object): boolean {
  const kind = (session.constructor as { [entityKind]?: string })[entityKind];
  if (kind === "PgliteSession") return true;
  const client = (session as { client?: { options?: { max?: unknown } } }).client;
  return client?.options?.max === 1;
}
