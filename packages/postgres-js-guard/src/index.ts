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
import { EventEmitter } from "node:events";
import { connect as connectTcp, isIP, type Socket } from "node:net";
import { type ConnectionOptions, connect as connectTls } from "node:tls";
import postgres from "postgres";
import {
  ClientStreamReader,
  commitsTransaction,
  endsSession,
  endsTransaction,
  errorFields,
  errorResponse,
  leadingStrings,
  readyForQuery,
  type ServerMessages,
  ServerStreamReader,
} from "./protocol-messages.js";

/** How the guard connects: its TLS, which it sets up below itself so that it reads the protocol in the clear. */
export interface GuardedSocketOptions {
  /**
   * TLS, with the values postgres.js's `ssl` takes: `"require"` or `"prefer"` (encrypted, the certificate not checked;
   * `prefer` falls back to plain when the server has no TLS), `"verify-full"` or `true` (the certificate checked
   * against the host), or Node's TLS options. Default: none.
   */
  ssl?: boolean | "require" | "prefer" | "allow" | "verify-full" | ConnectionOptions;
}

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

/** What postgres.js hands a socket factory: its parsed options. */
interface ConnectingTo {
  host: string[];
  port: number[];
  path?: string | false;
  ssl?: unknown;
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

const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 4, 210, 22, 47]);
const CHAR = (letter: string) => letter.charCodeAt(0);
/**
 * The last message of a server's answer to a batch that ends with a Flush: a statement described (RowDescription,
 * NoData), a portal run or suspended (CommandComplete, PortalSuspended). What comes before them (ParseComplete,
 * ParameterDescription, rows) leaves the batch waiting.
 */
const ANSWERS_FLUSH = new Set([CHAR("T"), CHAR("n"), CHAR("C"), CHAR("s")]);
/** What the guard reads of what postgres.js sends: Parse, Bind, Flush, Sync and simple Query. */
const WATCHED_SENT = new Set([CHAR("P"), CHAR("B"), CHAR("H"), CHAR("S"), CHAR("Q")]);

/** How a batch ends its transaction: not at all, by a rollback, or by a COMMIT (truthy when it ends it). */
type Ends = 0 | 1 | 2;
const NOT_ENDING = 0;
const ROLLS_BACK = 1;
const COMMITS = 2;

function endsOf(text: string): Ends {
  if (!endsTransaction(text)) return NOT_ENDING;
  return commitsTransaction(text) ? COMMITS : ROLLS_BACK;
}

/** What a COMMIT answered ROLLBACK is told instead: PostgreSQL's code for a failed transaction. */
const COMMIT_ROLLED_BACK = errorResponse({
  severity_local: "ERROR",
  severity: "ERROR",
  code: "25P02",
  message:
    "COMMIT was answered ROLLBACK: the transaction had failed, so nothing of it was kept (guardedConnections). " +
    "A statement of it failed before; behind a transaction pooler, postgres.js needs prepare: false.",
});

/** Why a session ended: the server said so (a FATAL error), or the socket failed or closed. */
type Ending = { fields: Record<string, string> } | { error: Error } | { closed: true };

/** The socket postgres.js sees: the real one below, and the protocol read on the way through. */
export class GuardedSocket extends EventEmitter {
  readonly host: string;
  readonly port: number;
  readonly #tcp: Socket | undefined;
  #below: Socket | undefined;
  /** postgres.js's writes before the socket below is ready (TLS being set up). */
  #queued: Array<[Buffer, ((error?: Error | null) => void) | undefined]> = [];
  #state: "open" | "ending" | "closed" = "open";
  #ending: Ending | undefined;
  readonly #fromServer = new ServerStreamReader(this.#serverMessages());
  readonly #toServer = new ClientStreamReader(WATCHED_SENT, (type, message) => this.#sent(type, message));
  /** Whether the session got past its startup (a first ReadyForQuery). */
  #started = false;
  /** For each request awaiting its ReadyForQuery (a Sync, a simple Query): how it ends a transaction, if it does. */
  readonly #awaiting: Ends[] = [];
  /** How the statements sent since the last Sync end a transaction, if they do. */
  #batchEnds: Ends = NOT_ENDING;
  /** The last batch sent ends with a Flush, and nothing came back for it yet (a describe, or a cursor's rows). */
  #flushAwaiting = false;
  /** A cursor's portal is suspended between two fetches: its code will send more before it ends. */
  #portalOpen = false;
  /** The last batch was refused already (its Flush was), so its Sync is owed a ReadyForQuery alone. */
  #batchRefused = false;
  #inTransaction = false;
  /**
   * The names of the prepared statements that end a transaction (postgres.js prepares COMMIT once per connection and
   * binds it by name after), as the bytes a Bind carries them in, to be found without decoding every Bind.
   */
  readonly #endingStatements: Buffer[] = [];
  /** Those of them that commit. */
  readonly #committingStatements: Buffer[] = [];
  /** Whether the unnamed statement last parsed (what a connection without prepared statements binds) ends one. */
  #unnamedEnds: Ends = NOT_ENDING;
  /** The last ReadyForQuery said the transaction failed: a COMMIT now is answered ROLLBACK. */
  #failed = false;
  /** The batch being answered had an error of its own. */
  #errorInBatch = false;
  /** Moves on with every write once the session is over, so that a wait for quiet that saw none can tell. */
  #writes = 0;
  #answering = false;

  /** A socket that fails at once with `error`, for options the guard cannot connect with. */
  static failed(options: ConnectingTo, error: Error): GuardedSocket {
    const socket = new GuardedSocket(options, undefined, false);
    queueMicrotask(() => socket.#end({ error }));
    return socket;
  }

  constructor(options: ConnectingTo, ssl: GuardedSocketOptions["ssl"], connect = true) {
    super();
    this.host = options.host[0] ?? "localhost";
    this.port = options.port[0] ?? 5432;
    if (!connect) return;
    // Without Nagle's algorithm: postgres.js writes a statement of 1 kB or more at once, and one sent right behind it
    // (a COMMIT behind a large answer) would otherwise wait a round trip for the first one's ACK.
    this.#tcp = options.path
      ? connectTcp(options.path)
      : connectTcp({ port: this.port, host: this.host, noDelay: true });
    this.#tcp.on("error", (error) => this.#end({ error }));
    this.#tcp.on("close", () => this.#end({ closed: true }));
    if (ssl) this.#startTls(ssl);
    else this.#ready(this.#tcp);
  }

  get readyState(): "open" | "closed" {
    return this.#state === "closed" ? "closed" : "open";
  }

  /** Sends bytes to the server, or answers them itself once the session is over (postgres.js's socket contract). */
  write(chunk: Buffer | Uint8Array, callback?: (error?: Error | null) => void): boolean {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.#toServer.read(bytes);
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

  /** Ends the connection once `data` is sent, as a `net.Socket` does; nothing once the session is over. */
  end(data?: Buffer | Uint8Array): this {
    const below = this.#below ?? this.#tcp;
    if (this.#state !== "open" || !below) return this;
    if (data) below.end(data);
    else below.end();
    return this;
  }

  /** Closes the connection at once: postgres.js is told it closed when nothing it sent is still owed an answer. */
  destroy(): this {
    this.#end({ closed: true });
    return this;
  }

  /** TCP keep-alive on the real socket, as postgres.js asks for it. */
  setKeepAlive(enable?: boolean, initialDelay?: number): this {
    this.#tcp?.setKeepAlive(enable, initialDelay);
    return this;
  }

  /** Stops reading from the server: postgres.js's back-pressure. */
  pause(): this {
    (this.#below ?? this.#tcp)?.pause();
    return this;
  }

  /** Reads from the server again. */
  resume(): this {
    (this.#below ?? this.#tcp)?.resume();
    return this;
  }

  #startTls(ssl: NonNullable<GuardedSocketOptions["ssl"]>): void {
    const tcp = this.#tcp as Socket;
    tcp.once("connect", () => tcp.write(SSL_REQUEST));
    tcp.once("data", (answer: Buffer) => {
      if (answer[0] !== CHAR("S")) {
        if (ssl === "prefer") return this.#ready(tcp);
        return this.#end({
          error: new Error("guardedConnections: the server does not accept TLS, and ssl requires it."),
        });
      }
      const verify = ssl === true || ssl === "verify-full";
      const options = typeof ssl === "object" ? ssl : { rejectUnauthorized: verify };
      const servername = isIP(this.host) ? undefined : this.host;
      const secured = connectTls({ socket: tcp, ...(servername && { servername }), ...options });
      secured.on("error", (error) => this.#end({ error }));
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
  #sent(type: number, message: Buffer): void {
    if (type === CHAR("P")) {
      const [name = "", text = ""] = leadingStrings(message, 2);
      const ends = endsOf(text);
      // A statement described before it is bound (postgres.js's first use of it) ends the transaction as it is sent.
      if (ends) this.#batchEnds = ends;
      if (name === "") this.#unnamedEnds = ends;
      else if (ends) {
        this.#endingStatements.push(Buffer.from(`${name}\0`));
        if (ends === COMMITS) this.#committingStatements.push(Buffer.from(`${name}\0`));
      }
    } else if (type === CHAR("B")) {
      if (bindsUnnamed(message)) {
        if (this.#unnamedEnds) this.#batchEnds = this.#unnamedEnds;
      } else if (bindsOneOf(message, this.#endingStatements)) {
        this.#batchEnds = bindsOneOf(message, this.#committingStatements) ? COMMITS : ROLLS_BACK;
      }
    } else if (type === CHAR("H")) {
      this.#flushAwaiting = true;
    } else {
      const ends = this.#batchEnds || (type === CHAR("Q") ? endsOf(leadingStrings(message, 1)[0] ?? "") : NOT_ENDING);
      this.#awaiting.push(ends);
      this.#batchEnds = NOT_ENDING;
      this.#flushAwaiting = false;
      this.#portalOpen = false;
    }
  }

  /** Hands on what the server sent, up to an error that ends the session, which ends the socket instead. */
  #received(chunk: Buffer): void {
    if (this.#state !== "open") return;
    for (const piece of this.#fromServer.read(chunk)) this.emit("data", piece);
  }

  /** What the guard follows of the server's messages as they pass. */
  #serverMessages(): ServerMessages {
    return {
      started: (type) => {
        // Only an answer to the last batch, the one a Flush ended: earlier ones are still owed their ReadyForQuery.
        if (this.#awaiting.length === 0 && ANSWERS_FLUSH.has(type)) {
          this.#flushAwaiting = false;
          if (type === CHAR("s")) this.#portalOpen = true;
        }
        // A COMMIT sent into a failed transaction is answered ROLLBACK, without an error, which drivers take for a
        // commit (postgres.js sends a COMMIT again so when a pooler lost its prepared one): it fails here instead.
        if (type === CHAR("Z") && this.#awaiting[0] === COMMITS && this.#failed && !this.#errorInBatch) {
          return COMMIT_ROLLED_BACK;
        }
        return undefined;
      },
      ready: (status) => {
        this.#started = true;
        this.#awaiting.shift();
        this.#inTransaction = status !== CHAR("I");
        this.#failed = status === CHAR("E");
        this.#errorInBatch = false;
      },
      error: (message) => {
        const fields = errorFields(message);
        if (!endsSession(fields)) {
          this.#errorInBatch = true;
          if (this.#awaiting.length === 0) this.#flushAwaiting = false;
          return true;
        }
        // What came before the error is still handed on (by #received), before anything of the guard's.
        this.#end({ fields });
        return false;
      },
    };
  }

  /** The session is over: tell postgres.js in the way it handles, and that the socket closed once it is done. */
  #end(ending: Ending): void {
    if (this.#state !== "open") return;
    this.#state = "ending";
    this.#ending = ending;
    this.#tcp?.destroy();
    this.#below?.destroy();
    // What postgres.js has of a message the socket broke off in the middle of is finished first, so that what it
    // reads next starts a message.
    const rest = this.#fromServer.finishMessage();
    if (rest.length > 0) this.emit("data", rest);
    this.#answerLater();
  }

  /** On the next turn (never inside postgres.js's own call): what is owed, then a close once nothing is. */
  #answerLater(): void {
    if (this.#answering) return;
    this.#answering = true;
    setImmediate(() => {
      this.#answering = false;
      this.#answerOwed();
      this.#closeWhenQuiet();
    });
  }

  /**
   * Inside a transaction, each statement is refused as the server would refuse it (its error, and a ReadyForQuery
   * saying the transaction failed), up to the one that ends it; so is a cursor's next fetch. Anything else owed fails
   * with the socket's error: postgres.js's own path for a failed socket, which fails what is in flight and hands the
   * connection nothing more (a ReadyForQuery outside a transaction would hand it the pool's queue).
   */
  #answerOwed(): void {
    const ending = this.#ending as Ending;
    if (!this.#started) {
      this.#awaiting.length = 0;
      if (!("closed" in ending)) this.#fail(ending);
      return;
    }
    const refusal = errorResponse("fields" in ending ? ending.fields : lostFields(ending));
    const answers: Buffer[] = [];
    let failTheRest = false;
    while (this.#awaiting.length > 0) {
      const ends = this.#awaiting.shift();
      if (!this.#inTransaction || ends) {
        failTheRest = true;
        break;
      }
      if (!this.#batchRefused) answers.push(refusal);
      this.#batchRefused = false;
      answers.push(readyForQuery("E"));
    }
    if (!failTheRest && this.#flushAwaiting) {
      if (!this.#inTransaction || this.#batchEnds) failTheRest = true;
      else {
        // The last batch awaits what a Flush asks for (a description, a cursor's rows): refused, postgres.js sends
        // its Sync, which is answered as above without a second error. Never outside a transaction: there no
        // ReadyForQuery would follow to clear the error, and postgres.js would fail its next session with it.
        answers.push(refusal);
        this.#flushAwaiting = false;
        this.#batchRefused = true;
      }
    }
    if (answers.length > 0) this.emit("data", Buffer.concat(answers));
    if (!failTheRest) return;
    this.#awaiting.length = 0;
    this.#inTransaction = false;
    this.#portalOpen = false;
    this.#flushAwaiting = false;
    this.#batchRefused = false;
    this.#batchEnds = NOT_ENDING;
    this.#fail(ending);
  }

  /** postgres.js's own path for a failed socket: what is in flight fails, and no more is sent on it. */
  #fail(ending: Ending): void {
    const error =
      "fields" in ending
        ? new postgres.PostgresError(ending.fields as never)
        : "error" in ending
          ? ending.error
          : Object.assign(new Error(`write CONNECTION_CLOSED ${this.host}:${this.port}`), {
              code: "CONNECTION_CLOSED",
            });
    if (this.listenerCount("error") > 0) this.emit("error", error);
  }

  /**
   * Tells postgres.js the socket closed once nothing is owed, no transaction or cursor is open on it, and two turns
   * passed without a write: a write it scheduled before, or in answer to what the guard just answered, has come.
   */
  #closeWhenQuiet(): void {
    if (this.#state === "closed" || this.#awaiting.length > 0 || this.#flushAwaiting) return;
    if (this.#inTransaction || this.#portalOpen) return;
    const writes = this.#writes;
    setImmediate(() =>
      setImmediate(() => {
        if (writes !== this.#writes || this.#state === "closed") return;
        this.#state = "closed";
        this.emit("close", this.#ending !== undefined && "error" in this.#ending);
      }),
    );
  }
}

/** Where a Bind message's statement name starts: after its portal's name. */
const statementNameAt = (bind: Buffer) => bind.indexOf(0, 5) + 1;

/** Whether a Bind message binds the unnamed statement. */
function bindsUnnamed(bind: Buffer): boolean {
  return bind[statementNameAt(bind)] === 0;
}

/** Whether a Bind message binds one of `names` (each with its terminating zero byte). */
function bindsOneOf(bind: Buffer, names: Buffer[]): boolean {
  const start = statementNameAt(bind);
  return names.some((name) => bind.compare(name, 0, name.length, start, start + name.length) === 0);
}

/** An ErrorResponse's fields for a session that ended without a word from the server (class 08). */
function lostFields(ending: { error: Error } | { closed: true }): Record<string, string> {
  const reason = "error" in ending ? ending.error.message : "the server closed the connection";
  return { severity: "ERROR", code: "08006", message: `the connection to the database was lost: ${reason}` };
}
