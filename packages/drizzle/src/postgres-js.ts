/**
 * `guardedSocket()`: the sockets a postgres.js pool connects through, so that a connection the database ends
 * (a crash, a restart, `pg_terminate_backend`, a proxy dropping it) is ended cleanly, without the defects postgres.js
 * 3.4.9 shows there (porsager/postgres#1154, #1208). Measured by `npm run chaos` and
 * `packages/drizzle/test/postgres-js-socket.test.ts`, each reproduced without the guard:
 * - the session's last error (`57P01 terminating connection`) stays with the connection and fails the first
 *   statement sent after it reconnects, so requests fail after the database is back;
 * - a statement sent on a connection that closed under a transaction throws an uncaught `TypeError: Cannot read
 *   properties of null (reading 'write')`, which takes a plain Node server down;
 * - a write postgres.js had scheduled when the socket closed leaves it a stale write buffer, so every reconnection
 *   after it waits out `connect_timeout` (about ten of them, until enough bytes pile up to be flushed).
 *
 * The guard sits between postgres.js and the real socket and reads the protocol as it passes. Once the server has
 * ended the session, the guard answers in its place, the way a server refusing everything would: each request
 * postgres.js has in flight, and each it sends after, gets an error (the one that ended the session, which is not
 * handed on as a session error) and a ReadyForQuery, so postgres.js fails it and moves on as usual, a transaction's
 * ROLLBACK or COMMIT included. postgres.js is told the socket closed only once nothing is owed, no transaction is
 * left open on it, and two turns of the event loop passed without a write: it can no longer have a write scheduled
 * there. A transaction whose code never comes back to end it is given `transactionGraceMs`.
 *
 *   const client = postgres(url, guardedConnections({ max: 10, ssl: "require" }));
 *
 * TLS is the guard's to set up (postgres.js would otherwise run TLS above it, where it reads nothing), so
 * `guardedConnections` moves `ssl` to it; leave `sslmode` out of the URL. Only the first host of a multi-host URL is
 * used.
 */
import { EventEmitter } from "node:events";
import { connect as connectTcp, isIP, type Socket } from "node:net";
import { type ConnectionOptions, connect as connectTls } from "node:tls";
import postgres from "postgres";
import {
  endsSession,
  endsTransaction,
  errorFields,
  errorResponse,
  leadingStrings,
  MessageSplitter,
  readyForQuery,
} from "./wire.js";

export interface GuardedSocketOptions {
  /**
   * TLS, with the values postgres.js's `ssl` takes: `"require"`, `"prefer"` or `"allow"` (encrypted, certificate not
   * checked; `prefer` and `allow` fall back to plain when the server has no TLS), `"verify-full"` or `true` (the
   * certificate checked against the host), or Node's TLS options. Default: none.
   */
  ssl?: boolean | "require" | "prefer" | "allow" | "verify-full" | ConnectionOptions;
  /**
   * How long a connection that the database ended mid-transaction waits for that transaction's code to send its
   * ROLLBACK before postgres.js is told it closed anyway, in ms. Default 10 s.
   */
  transactionGraceMs?: number;
}

/**
 * postgres.js options whose connections go through the guard: `postgres(url, guardedConnections({ max: 10 }))`.
 * `ssl` moves to the guard, which sets TLS up below itself; everything else is handed to postgres.js as it is.
 */
export function guardedConnections<TOptions extends postgres.Options<Record<string, postgres.PostgresType>>>(
  options: TOptions & Pick<GuardedSocketOptions, "transactionGraceMs"> = {} as TOptions,
): TOptions {
  const { ssl, transactionGraceMs, ...rest } = options;
  const socket = guardedSocket({
    ...(ssl !== undefined && { ssl: ssl as NonNullable<GuardedSocketOptions["ssl"]> }),
    ...(transactionGraceMs !== undefined && { transactionGraceMs }),
  });
  // postgres.js takes `socket` (a documented option its types leave out).
  return { ...rest, socket } as unknown as TOptions;
}

/** What postgres.js hands a socket factory: its parsed options. */
interface ConnectingTo {
  host: string[];
  port: number[];
  path?: string | false;
  ssl?: unknown;
}

/** A socket factory for postgres.js's `socket` option: what `guardedConnections` sets. */
export function guardedSocket({ ssl, transactionGraceMs = 10_000 }: GuardedSocketOptions = {}) {
  return function connectGuarded(options: ConnectingTo): GuardedSocket {
    if (options.ssl) {
      throw new TypeError(
        "guardedSocket: postgres.js was given ssl (here, or as sslmode in the URL); give it to guardedConnections " +
          "(or guardedSocket) instead, which sets TLS up below the guard.",
      );
    }
    return new GuardedSocket(options, ssl, transactionGraceMs);
  };
}

const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 4, 210, 22, 47]);
const CHAR = (letter: string) => letter.charCodeAt(0);
/**
 * The last message of a server's answer to a batch that ends with a Flush: a statement described (RowDescription,
 * NoData), a portal run or suspended (CommandComplete, PortalSuspended), or an error that leaves the session open.
 * What comes before them (ParseComplete, ParameterDescription, rows) leaves the batch waiting.
 */
const ANSWERS_FLUSH = new Set([CHAR("T"), CHAR("n"), CHAR("C"), CHAR("s")]);

/** The socket postgres.js sees: the real one below, and the protocol read on the way through. */
export class GuardedSocket extends EventEmitter {
  readonly host: string;
  readonly port: number;
  readonly #tcp: Socket;
  #below: Socket | undefined;
  /** postgres.js's writes before the socket below is ready (TLS being set up). */
  #queued: Array<[Buffer, ((error?: Error | null) => void) | undefined]> = [];
  #state: "open" | "ending" | "closed" = "open";
  /** The server's error that ended the session, as the fields of an ErrorResponse. */
  #endedWith: Record<string, string> | undefined;
  /** Whether the socket below failed (rather than closed, or the session ended with an error): postgres.js backs off. */
  #socketFailed = false;
  readonly #fromServer = new MessageSplitter();
  readonly #toServer = new MessageSplitter({ untypedFirst: true });
  #firstSent = false;
  /** Whether the session got past its startup (a first ReadyForQuery): only then can the guard answer for it. */
  #started = false;
  /** For each request awaiting its ReadyForQuery (a Sync, a simple Query): whether it ends a transaction. */
  readonly #awaiting: boolean[] = [];
  /** The statements sent since the last Sync end a transaction. */
  #batchEnds = false;
  /** A Flush went out and nothing came back for it yet (postgres.js describing a statement before it binds it). */
  #flushAwaiting = false;
  /** This batch was already answered with an error (its Flush was), so its Sync needs only the ReadyForQuery. */
  #batchRefused = false;
  #inTransaction = false;
  /** Prepared statements by name, and whether each ends a transaction (postgres.js prepares COMMIT once). */
  readonly #statementEnds = new Map<string, boolean>();
  /** Moves on with every write once the session is over, so that a wait for quiet that saw none can tell. */
  #writes = 0;
  #answering = false;
  #graceTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #transactionGraceMs: number;

  constructor(options: ConnectingTo, ssl: GuardedSocketOptions["ssl"], transactionGraceMs: number) {
    super();
    this.host = options.host[0] ?? "localhost";
    this.port = options.port[0] ?? 5432;
    this.#transactionGraceMs = transactionGraceMs;
    this.#tcp = options.path ? connectTcp(options.path) : connectTcp(this.port, this.host);
    this.#tcp.on("error", (error) => {
      this.#socketFailed = this.#state === "open";
      this.#end(lostWith(error));
    });
    this.#tcp.on("close", () => this.#end(lostWith(new Error("the server closed the connection"))));
    if (ssl) this.#startTls(ssl);
    else this.#ready(this.#tcp);
  }

  get readyState(): "open" | "closed" {
    return this.#state === "closed" ? "closed" : "open";
  }

  write(chunk: Buffer | Uint8Array, callback?: (error?: Error | null) => void): boolean {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.#watchSent(bytes);
    if (this.#state !== "open") {
      // Nothing reaches a session that is over: the guard answers what was just sent, on the next turn.
      this.#writes++;
      this.#answerLater();
      if (callback) queueMicrotask(() => callback());
      return true;
    }
    if (!this.#below) {
      this.#queued.push([bytes, callback]);
      return true;
    }
    return this.#below.write(bytes, callback);
  }

  end(data?: Buffer | Uint8Array): this {
    if (this.#state !== "open") return this;
    const below = this.#below ?? this.#tcp;
    if (data) below.end(data);
    else below.end();
    return this;
  }

  destroy(): this {
    this.#end(lostWith(new Error("the client ended the connection")));
    return this;
  }

  setKeepAlive(enable?: boolean, initialDelay?: number): this {
    this.#tcp.setKeepAlive(enable, initialDelay);
    return this;
  }

  pause(): this {
    (this.#below ?? this.#tcp).pause();
    return this;
  }

  resume(): this {
    (this.#below ?? this.#tcp).resume();
    return this;
  }

  #startTls(ssl: NonNullable<GuardedSocketOptions["ssl"]>): void {
    this.#tcp.once("connect", () => this.#tcp.write(SSL_REQUEST));
    this.#tcp.once("data", (answer: Buffer) => {
      if (answer[0] !== CHAR("S")) {
        if (ssl === "prefer" || ssl === "allow") return this.#ready(this.#tcp);
        return this.#end(lostWith(new Error("guardedSocket: the server does not accept TLS, and ssl requires it.")));
      }
      const verify = ssl === true || ssl === "verify-full";
      const options = typeof ssl === "object" ? ssl : { rejectUnauthorized: verify };
      const servername = isIP(this.host) ? undefined : this.host;
      const secured = connectTls({ socket: this.#tcp, ...(servername && { servername }), ...options });
      secured.on("error", (error) => this.#end(lostWith(error)));
      secured.once("secureConnect", () => this.#ready(secured));
    });
  }

  #ready(below: Socket): void {
    if (this.#state !== "open") return;
    this.#below = below;
    below.on("data", (chunk: Buffer) => this.#received(chunk));
    below.on("drain", () => this.emit("drain"));
    for (const [bytes, callback] of this.#queued.splice(0)) below.write(bytes, callback);
  }

  /** Follows what postgres.js sends: the requests owed an answer, and the statements that end a transaction. */
  #watchSent(bytes: Buffer): void {
    for (const message of this.#toServer.push(bytes).messages) {
      if (!this.#firstSent) {
        this.#firstSent = true;
        continue;
      }
      const type = message[0];
      if (type === CHAR("P")) {
        const [name = "", text = ""] = leadingStrings(message, 2);
        this.#statementEnds.set(name, endsTransaction(text));
      } else if (type === CHAR("B")) {
        if (this.#statementEnds.get(leadingStrings(message, 2)[1] ?? "")) this.#batchEnds = true;
      } else if (type === CHAR("H")) {
        this.#flushAwaiting = true;
      } else if (type === CHAR("S") || type === CHAR("Q")) {
        const ends = this.#batchEnds || (type === CHAR("Q") && endsTransaction(leadingStrings(message, 1)[0] ?? ""));
        this.#awaiting.push(ends);
        this.#batchEnds = false;
        this.#flushAwaiting = false;
      }
    }
  }

  /** Hands on what the server sent, up to an error that ends the session, which ends the socket instead. */
  #received(chunk: Buffer): void {
    if (this.#state !== "open") return;
    const { messages, bytes } = this.#fromServer.push(chunk);
    for (const message of messages) {
      const type = message[0];
      if (type === CHAR("Z")) {
        this.#started = true;
        this.#awaiting.shift();
        this.#inTransaction = message[5] !== CHAR("I");
      } else if (type === CHAR("E")) {
        const fields = errorFields(message);
        if (!endsSession(fields)) {
          this.#flushAwaiting = false;
          continue;
        }
        const before = bytes.subarray(0, message.byteOffset - bytes.byteOffset);
        if (before.length > 0) this.emit("data", before);
        this.#end(fields);
        return;
      } else if (type !== undefined && ANSWERS_FLUSH.has(type)) {
        this.#flushAwaiting = false;
      }
    }
    if (bytes.length > 0) this.emit("data", bytes);
  }

  /** The session is over: answer in its place what is owed, and tell postgres.js once it can no longer write. */
  #end(fields: Record<string, string>): void {
    if (this.#state !== "open") return;
    this.#state = "ending";
    this.#endedWith = fields;
    this.#tcp.destroy();
    this.#below?.destroy();
    this.#answerLater();
  }

  /** On the next turn (never inside postgres.js's own call): the answers owed, then a close once nothing is. */
  #answerLater(): void {
    if (this.#answering) return;
    this.#answering = true;
    setImmediate(() => {
      this.#answering = false;
      this.#answerOwed();
      this.#closeWhenQuiet();
    });
  }

  #answerOwed(): void {
    const refusal = errorResponse(this.#endedWith ?? {});
    if (!this.#started) {
      // A session that never started is ended as postgres.js ends a failed connection: an error, then the close.
      this.#awaiting.length = 0;
      if (this.listenerCount("error") > 0) this.emit("error", new postgres.PostgresError(this.#endedWith as never));
      return;
    }
    const answers: Buffer[] = [];
    if (this.#flushAwaiting) {
      answers.push(refusal);
      this.#flushAwaiting = false;
      this.#batchRefused = true;
    }
    for (const ends of this.#awaiting.splice(0)) {
      if (!this.#batchRefused) answers.push(refusal);
      this.#batchRefused = false;
      if (ends) this.#inTransaction = false;
      answers.push(readyForQuery(this.#inTransaction ? "E" : "I"));
    }
    if (answers.length > 0) this.emit("data", Buffer.concat(answers));
  }

  /**
   * Tells postgres.js the socket closed once nothing is owed, no transaction is open on it, and two turns passed
   * without a write: a write it scheduled before, or in answer to what the guard just answered, has come by then.
   */
  #closeWhenQuiet(): void {
    if (this.#state === "closed" || this.#awaiting.length > 0 || this.#flushAwaiting) return;
    if (this.#inTransaction) {
      this.#graceTimer ??= setTimeout(() => {
        this.#inTransaction = false;
        this.#closeWhenQuiet();
      }, this.#transactionGraceMs).unref();
      return;
    }
    clearTimeout(this.#graceTimer);
    const writes = this.#writes;
    setImmediate(() =>
      setImmediate(() => {
        if (writes !== this.#writes || this.#state === "closed") return;
        this.#state = "closed";
        this.emit("close", this.#socketFailed);
      }),
    );
  }
}

/** An ErrorResponse's fields for a connection lost without a word from the server (class 08). */
function lostWith(error: Error): Record<string, string> {
  return {
    severity: "FATAL",
    code: "08006",
    message: `the connection to the database was lost: ${error.message}`,
  };
}
