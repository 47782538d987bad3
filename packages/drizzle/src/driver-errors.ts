/**
 * How each driver (postgres.js, node-postgres, PGlite) says what went wrong, read in one place: the SQLSTATE and
 * message wherever the driver (or Drizzle's wrapper) put them, a connection lost under a statement, a lock timeout,
 * whether a failed commit was the procedure's own statement or the server's trouble, and idemkit's tables missing.
 */
import { IdempotencyError, IdempotencyErrorCode } from "@idemkit/core";

/** PostgreSQL's own message of an error, wherever the driver (or Drizzle's wrapper) put it. */
export function databaseMessageOf(error: unknown): string {
  for (let current = error; typeof current === "object" && current !== null; ) {
    if (sqlStateOf({ code: (current as { code?: unknown }).code }) !== undefined) {
      return String((current as { message?: unknown }).message);
    }
    current = (current as { cause?: unknown }).cause;
  }
  return String(error);
}

/** A SQLSTATE's shape: a standard class starts with a digit; PL/pgSQL, foreign-data and file ones with these. */
const SQLSTATE = /^([0-9][0-9A-Z]|HV|P0|F0|XX)[0-9A-Z]{3}$/;

/** The SQLSTATE of a PostgreSQL error, wherever the driver (or Drizzle's wrapper) put it; never a Node error code. */
export function sqlStateOf(error: unknown): string | undefined {
  for (let current = error; typeof current === "object" && current !== null; ) {
    const { code } = current as { code?: unknown };
    if (typeof code === "string" && SQLSTATE.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** PostgreSQL's lock_not_available (55P03): a `lock_timeout` passed. */
export function isLockTimeout(error: unknown): boolean {
  return sqlStateOf(error) === "55P03";
}

/**
 * Whether PostgreSQL refused a named prepared statement as missing (26000) or as there already (42P05): what a
 * transaction pooler does to statements prepared by name, as its server connections change under the client's.
 */
export function isPreparedStatementLost(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state === "26000" || state === "42P05";
}

/** What drivers call a connection that closed under a statement, besides SQLSTATE class 08. */
const CONNECTION_LOST_CODES = new Set(["CONNECTION_CLOSED", "ECONNRESET", "EPIPE"]);

/**
 * Whether `error` says the statement's connection was lost: closed or reset under it (postgres.js's
 * CONNECTION_CLOSED, a socket's ECONNRESET, node-postgres's "Connection terminated unexpectedly"), or ended by the
 * server going down (57P01 admin shutdown, 57P02 crash shutdown, class 08). A statement sent again then goes out on
 * another connection, or a new one: after a restart, the first statement on each connection of a pool can fail so.
 */
export function isConnectionLost(error: unknown): boolean {
  for (let current = error; typeof current === "object" && current !== null; ) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === "string" && CONNECTION_LOST_CODES.has(code)) return true;
    if (message === "Connection terminated unexpectedly") return true;
    current = (current as { cause?: unknown }).cause;
  }
  const state = sqlStateOf(error);
  return state === "57P01" || state === "57P02" || state?.startsWith("08") === true;
}

/**
 * The pauses before each new attempt of a statement (or a transaction that never began) whose connection was lost:
 * long enough for the driver to have let that connection go (the next attempt then takes another, or a new one),
 * short enough to stay well inside the caller's deadline.
 */
const PAUSES_ON_LOST_CONNECTION_MS = [5, 50];

/**
 * Runs `call` again, after a short pause, while it fails because its connection was lost, up to three times in all:
 * for calls that are safe to repeat, or that never began. The caller's own deadline bounds the whole.
 */
export async function againIfConnectionLost<T>(call: () => Promise<T>): Promise<T> {
  for (const pauseMs of [...PAUSES_ON_LOST_CONNECTION_MS, undefined]) {
    try {
      return await call();
    } catch (error) {
      if (pauseMs === undefined || !isConnectionLost(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }
  throw new Error("unreachable");
}

/**
 * Whether a transaction whose work finished failed to commit because of a statement of the procedure's own that
 * failed and was caught: the completing update found the transaction already aborted (25P02, as PGlite and
 * node-postgres report it), or it went through and the driver still refused to commit, remembering the failed
 * statement (postgres.js). A lost connection or a server going away is the store's failure instead.
 */
export async function isProcedureFailure(error: unknown, completion: Promise<unknown>): Promise<boolean> {
  const completionError = await completion.then(
    () => undefined,
    (failure: unknown) => failure ?? new Error("completion failed"),
  );
  if (completionError !== undefined) return sqlStateOf(completionError) === "25P02";
  const state = sqlStateOf(error);
  return state !== undefined && !SERVER_TROUBLE.test(state);
}

/**
 * SQLSTATEs that are not the procedure's doing: a connection, resources, the server or an operator failing, and a
 * transaction that conflicted with another (class 40, worth retrying whole). A statement timeout (57014) the
 * procedure caught is its own, as it is on every driver.
 */
const SERVER_TROUBLE = /^(08|40|53|58|XX)|^57(?!014)/;

/**
 * A statement of idemkit's that PostgreSQL refused because its tables are missing or from an older version is an
 * operator's to fix, not a database that is away: said as such (STORE_MISCONFIGURED, a 500 that clients do not
 * retry), naming what is missing and how to make it.
 */
export function explainMissingTables(error: unknown): never {
  const state = sqlStateOf(error);
  const detail = databaseMessageOf(error);
  if (state === "42P01" || state === "42703" || state === "42883") {
    throw new IdempotencyError(
      IdempotencyErrorCode.STORE_MISCONFIGURED,
      `idemkit's tables are missing or out of date in this database (${detail}). Add them to your Drizzle schema ` +
        '(export { idempotencyKeys } from "@idemkit/drizzle", and outboxEvents and processedEvents from "@idemkit/outbox" if you use them) ' +
        "and apply your migrations (drizzle-kit generate, then drizzle-kit migrate; or drizzle-kit push), or apply " +
        "the SQL in @idemkit/drizzle's repository, drizzle/.",
      { cause: error },
    );
  }
  if (state === "23502" && /"fence"/.test(detail)) {
    throw new IdempotencyError(
      IdempotencyErrorCode.STORE_MISCONFIGURED,
      `The idempotency_keys table is from an older version of idemkit (${detail}): its fence must be an identity ` +
        "column. Apply drizzle/0002_fences_never_repeat.sql (drizzle-kit generate makes the same change from the " +
        "schema; add its setval line).",
      { cause: error },
    );
  }
  throw error;
}
