/**
 * `guardedConnections()`: the sockets a postgres.js pool connects through, so that a connection the database ends
 * (a crash, a restart, `pg_terminate_backend`, a proxy dropping it) is ended cleanly, without the defects postgres.js
 * 3.4.9 shows there (porsager/postgres#1154, #1208), each reproduced without the guard in
 * `test/guarded-socket.test.ts` and measured by `npm run chaos`:
 * - the session's last error (`57P01 terminating connection`) stays with the connection and fails the first
 *   statement sent after it reconnects, so requests fail after the database is back;
 * - a statement sent on a connection that closed under a transaction (its ROLLBACK) throws an uncaught
 *   `TypeError: Cannot read properties of null (reading 'write')`, which takes a plain Node server down;
 * - a write postgres.js had scheduled when the socket closed leaves it a stale write buffer, so every reconnection
 *   after it waits out `connect_timeout` (about ten of them, until enough bytes pile up to be flushed).
 *
 * The guard sits between postgres.js and the real socket and reads the protocol as it passes. Once the session is
 * over, postgres.js is told so the way it handles best, and told the socket closed only once it can no longer write
 * to it (nothing it sent is unanswered, no transaction or cursor is open there, and two turns of the event loop went
 * by without a write, so nothing it scheduled is still to come):
 * - outside a transaction, the socket reports an error (the server's, or the socket's own), which fails what is in
 *   flight; statements still queued in the pool wait for the reconnection, as they would for a slow connection;
 * - inside one, the guard answers each statement as a server refusing it would (its error, and a ReadyForQuery that
 *   says the transaction failed), so the transaction's code fails and postgres.js goes on to its ROLLBACK or COMMIT,
 *   which the socket then fails with the error. A transaction whose code does not come back keeps its connection,
 *   as it would with the database up.
 *
 *   const client = postgres(url, guardedConnections({ max: 10, ssl: "require" }));
 *
 * TLS is the guard's to set up (postgres.js would otherwise run TLS above it, where it reads nothing), so
 * `guardedConnections` moves `ssl` to it; leave `sslmode` out of the URL. Only the first host of a multi-host URL is
 * used. Not covered: a connection held with `sql.reserve()` outside a transaction, which the guard cannot tell from
 * an idle one; its next statement after the database ended it meets postgres.js's own handling.
 *
 * @module @idemkit/postgres-js-guard
 */
import type postgres from "postgres";
import { type ConnectingTo, GuardedSocket, type GuardedSocketOptions } from "./guarded-socket.js";

export { GuardedSocket, type GuardedSocketOptions } from "./guarded-socket.js";

/**
 * postgres.js options whose connections go through the guard: `postgres(url, guardedConnections({ max: 10 }))`.
 * `ssl` moves to the guard, which sets TLS up below itself; everything else is handed to postgres.js as it is.
 */
export function guardedConnections<TOptions extends postgres.Options<Record<string, postgres.PostgresType>>>(
  options: TOptions = {} as TOptions,
): TOptions {
  const { ssl, ...rest } = options;
  const socket = guardedSocket(ssl !== undefined ? { ssl: ssl as NonNullable<GuardedSocketOptions["ssl"]> } : {});
  // postgres.js takes `socket` (a documented option its types leave out).
  return { ...rest, socket } as unknown as TOptions;
}

/** A socket factory for postgres.js's `socket` option: what `guardedConnections` sets. */
export function guardedSocket({ ssl }: GuardedSocketOptions = {}) {
  return function connectGuarded(options: ConnectingTo): GuardedSocket {
    if (options.ssl) {
      // Failed through the socket, not thrown: postgres.js would leave a connection whose factory threw connecting.
      return GuardedSocket.failed(
        options,
        new TypeError(
          "guardedConnections: postgres.js was given ssl (here, or as sslmode in the URL); give it to " +
            "guardedConnections instead, which sets TLS up below the guard, and leave sslmode out of the URL.",
        ),
      );
    }
    return new GuardedSocket(options, ssl);
  };
}
