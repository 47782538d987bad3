/**
 * Statements that bypass the idempotent transaction. In atomic mode a protected procedure must write through the
 * transaction it is handed (`ctx.idempotency.tx`, or its own `ctx.db` with the middleware's `dbKey`). A statement
 * sent through the database itself instead asks for another connection:
 * - on a driver with a single connection (PGlite, a pool of one) that connection is the transaction's, so the
 *   statement waits for the transaction, which waits for the procedure, which waits for the statement: the
 *   request hangs, and every request after it. Such a statement fails at once here, with the fix in its message.
 *   On PGlite the client itself is watched, so a second Drizzle instance or raw `client.query` is caught too.
 * - on a pool it runs, but outside the transaction: a stored 4xx no longer undoes it, a released 5xx no longer
 *   rolls it back, a crash no longer erases it. Development builds warn once per procedure when it goes through
 *   the store's own `db`; production pays nothing for this check.
 *
 * "Inside the procedure" is the procedure's async context (AsyncLocalStorage), so other requests that use the
 * database meanwhile are never mistaken for it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { entityKind } from "drizzle-orm";

/** What the guard needs of a Drizzle database: its session, which every statement goes through. */
interface GuardedDatabase {
  readonly _: { readonly session: object };
}

/** One idempotent transaction while its procedure runs. */
interface OpenTransaction {
  /** What a bypass goes through: the PGlite client, or else the session of the store's database. */
  readonly connection: object;
  /** The protected procedure, for messages; known once its key is claimed. */
  path: string | undefined;
  open: boolean;
}

const current = new AsyncLocalStorage<OpenTransaction>();
/** Objects whose methods already check for bypasses, so two stores on one database wrap them once. */
const watched = new WeakSet<object>();
/** Procedures already warned about, once each per process. */
const warnedPaths = new Set<string>();

export interface BypassGuard {
  /** Runs a procedure's work with statements that bypass `transaction` checked until the work settles. */
  within<T>(transaction: GuardedDatabase, work: () => Promise<T>): Promise<T>;
  /** Names the procedure whose transaction is open in this async context, for the messages. */
  name(path: string): void;
}

/**
 * A guard for the database `db`, or undefined when there is nothing to guard: a pool in production (no warning
 * to give).
 */
export function bypassGuard(db: GuardedDatabase): BypassGuard | undefined {
  const { session } = db._;
  const pglite = pgliteClientOf(session);
  const oneConnection = pglite !== undefined || isPoolOfOne(session);
  if (!oneConnection && globalThis.process?.env?.NODE_ENV === "production") return undefined;
  const connection = pglite ?? session;
  watch(session, { sync: ["prepareQuery"], async: ["transaction"] }, connection, oneConnection);
  if (pglite) watch(pglite, { sync: [], async: ["query", "exec", "transaction"] }, connection, true);
  return {
    async within(transaction, work) {
      // node-postgres on a single Client runs the transaction on the database's own session and connection:
      // every statement is inside the transaction, so nothing can bypass it.
      if (transaction._.session === session) return work();
      const opened: OpenTransaction = { connection, path: undefined, open: true };
      try {
        return await current.run(opened, work);
      } finally {
        opened.open = false;
      }
    },
    name(path) {
      const opened = current.getStore();
      if (opened) opened.path = path;
    },
  };
}

/** Makes the named methods of `target` check whether they were called from inside an idempotent procedure. */
function watch(
  target: object,
  methods: { sync: string[]; async: string[] },
  connection: object,
  oneConnection: boolean,
): void {
  if (watched.has(target)) return;
  watched.add(target);
  const callable = target as Record<string, unknown>;
  for (const name of [...methods.sync, ...methods.async]) {
    const original = callable[name];
    if (typeof original !== "function") continue;
    const returnsPromise = methods.async.includes(name);
    callable[name] = function checked(this: unknown, ...args: unknown[]) {
      const opened = current.getStore();
      if (opened?.open && opened.connection === connection) {
        const refusal = bypassed(opened.path ?? "A protected procedure", oneConnection);
        if (refusal) {
          if (returnsPromise) return Promise.reject(refusal);
          throw refusal;
        }
      }
      return original.apply(this, args);
    };
  }
}

/** The error that refuses a bypass on one connection; on a pool, warns (once per procedure) and lets it run. */
function bypassed(path: string, oneConnection: boolean): Error | undefined {
  const fix =
    "Write through the transaction the middleware hands over: ctx.idempotency.tx, or name your context's " +
    'database in idempotency({ dbKey: "db" }) so that ctx.db is that transaction.';
  if (oneConnection) {
    return new Error(
      `idemkit: ${path} sent a statement through the database itself while its idempotent transaction holds ` +
        `the only connection, so it would wait forever. ${fix}`,
    );
  }
  if (!warnedPaths.has(path)) {
    warnedPaths.add(path);
    console.warn(
      `idemkit: ${path} sent a statement through the database itself, outside its idempotent transaction: a ` +
        `stored error will not undo it, a retry may repeat it, and a crash will not erase it. ${fix}`,
    );
  }
  return undefined;
}

/** The PGlite instance behind a Drizzle PGlite session: one connection by nature. */
function pgliteClientOf(session: object): object | undefined {
  const kind = (session.constructor as { [entityKind]?: string })[entityKind];
  return kind === "PgliteSession" ? (session as { client: object }).client : undefined;
}

/** A postgres.js or node-postgres pool sized to one connection. */
function isPoolOfOne(session: object): boolean {
  const client = (session as { client?: { options?: { max?: unknown } } }).client;
  return client?.options?.max === 1;
}
