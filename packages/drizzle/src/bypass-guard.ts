/**
 * Statements that bypass the idempotent transaction. In atomic mode a protected procedure must write through the
 * transaction it is handed (`ctx.idempotency.tx`, or its own `ctx.db` with the middleware's `dbKey`). A statement
 * sent through the database itself instead asks for another connection:
 * - on a driver with a single connection (PGlite, a pool of one) that connection is the transaction's, so the
 *   statement waits for the transaction, which waits for the procedure, which waits for the statement: the
 *   request hangs, and every request after it. Such a statement fails at once here, with the fix in its message.
 * - on a pool it runs, but outside the transaction: a stored 4xx no longer undoes it, a released 5xx no longer
 *   rolls it back, a crash no longer erases it. Development builds warn once per procedure; production pays
 *   nothing for this check.
 *
 * What is watched is the driver's client the store's `db` was made with (`db.$client`, its entrances as `driver.ts`
 * tells them), so a statement through another Drizzle instance over the same client, or through the client itself
 * (`client.query`), is caught too.
 *
 * "Inside the procedure" is the procedure's async context (AsyncLocalStorage), so other requests that use the
 * database meanwhile are never mistaken for it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { TransactionBypassError } from "@idemkit/core";
import type { AnyPgDatabase } from "./database.js";
import { driverOf } from "./driver.js";

/** One idempotent transaction while its procedure runs. */
interface OpenTransaction {
  /** The driver's client a bypass goes through: the one the store's database was made with. */
  readonly client: object;
  /** The protected procedure, for messages; known once its key is claimed. */
  path: string | undefined;
  open: boolean;
}

const current = new AsyncLocalStorage<OpenTransaction>();
/** Clients whose methods already check for bypasses, so two stores on one database wrap them once. */
const watched = new WeakSet<object>();
/** Procedures already warned about, once each per process. */
const warnedPaths = new Set<string>();

export interface BypassGuard {
  /** Runs a procedure's work with statements that bypass its transaction checked until the work settles. */
  within<T>(work: () => Promise<T>): Promise<T>;
  /** Names the procedure whose transaction is open in this async context, for the messages. */
  name(path: string): void;
}

/**
 * A guard for the database `db`, or undefined when there is nothing to guard: a pool in production (no warning to
 * give), node-postgres's single Client (nothing can bypass), or a driver it does not know.
 */
export function bypassGuard(db: AnyPgDatabase): BypassGuard | undefined {
  const entrances = driverOf(db).entrances;
  if (!entrances) return undefined;
  const { client, methods, oneConnection } = entrances;
  if (!oneConnection && globalThis.process?.env?.NODE_ENV === "production") return undefined;
  watch(client, methods, oneConnection);
  return {
    async within(work) {
      const opened: OpenTransaction = { client, path: undefined, open: true };
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

/**
 * Makes the named methods of `client` check whether they were called from inside an idempotent procedure. They are
 * the driver's public methods, wrapped where they are: Drizzle offers no hook that sees a statement before it is
 * sent, and its sessions are not public.
 */
function watch(client: object, methods: readonly string[], oneConnection: boolean): void {
  if (watched.has(client)) return;
  watched.add(client);
  const callable = client as Record<string, unknown>;
  for (const name of methods) {
    const original = callable[name] as (...args: unknown[]) => unknown;
    callable[name] = function checked(this: unknown, ...args: unknown[]) {
      const opened = current.getStore();
      if (opened?.open && opened.client === client) {
        const refusal = bypassed(opened.path ?? "A protected procedure", oneConnection);
        // Thrown where it is called, not as a rejection: postgres.js's `unsafe` hands back a query that Drizzle
        // chains (`.values()`) before awaiting it, and Drizzle calls every one of these from an async function.
        if (refusal) throw refusal;
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
    return new TransactionBypassError(
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
