/**
 * The socket postgres.js connects through when `guardedConnections` set it: the real socket below (TCP, and TLS set
 * up below the guard), the protocol read on the way through, and, once the database ended the session, postgres.js
 * told so the way it handles best (see the package's module comment).
 */
import { EventEmitter } from "node:events";
import { connect as connectTcp, isIP, type Socket } from "node:net";
import { type ConnectionOptions, connect as connectTls } from "node:tls";
import postgres from "postgres";
import {
  ANSWERS_FLUSH,
  CHAR,
  COMMIT_ROLLED_BACK,
  endsSession,
  errorFields,
  errorResponse,
  lostFields,
  readyForQuery,
  type ServerMessages,
  ServerStreamReader,
  SSL_REQUEST,
} from "./protocol-messages.js";
import { COMMITS, SentRequests } from "./sent-requests.js";

/** How the guard connects: its TLS, which it sets up below itself so that it reads the protocol in the clear. */
export interface GuardedSocketOptions {
  /**
   * TLS, with the values postgres.js's `ssl` takes: `"require"` or `"prefer"` (encrypted, the certificate not checked;
   * `prefer` falls back to plain when the server has no TLS), `"verify-full"` or `true` (the certificate checked
   * against the host), or Node's TLS options. Default: none.
   */
  ssl?: boolean | "require" | "prefer" | "allow" | "verify-full" | ConnectionOptions;
}

/** What postgres.js hands a socket factory: its parsed options. */
export interface ConnectingTo {
  host: string[];
  port: number[];
  path?: string | false;
  ssl?: unknown;
}

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
  /** Whether the session got past its startup (a first ReadyForQuery). */
  #started = false;
  /** What postgres.js sent that is owed an answer, and what it does to the transaction. */
  readonly #requests = new SentRequests();
  /** The last batch was refused already (its Flush was), so its Sync is owed a ReadyForQuery alone. */
  #batchRefused = false;
  #inTransaction = false;
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
    this.#requests.read(bytes);
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
        if (this.#requests.awaiting.length === 0 && ANSWERS_FLUSH.has(type)) {
          this.#requests.flushAwaiting = false;
          if (type === CHAR("s")) this.#requests.portalOpen = true;
        }
        // A COMMIT sent into a failed transaction is answered ROLLBACK, without an error, which drivers take for a
        // commit (postgres.js sends a COMMIT again so when a pooler lost its prepared one): it fails here instead.
        if (type === CHAR("Z") && this.#requests.awaiting[0] === COMMITS && this.#failed && !this.#errorInBatch) {
          return COMMIT_ROLLED_BACK;
        }
        return undefined;
      },
      ready: (status) => {
        this.#started = true;
        this.#requests.awaiting.shift();
        this.#inTransaction = status !== CHAR("I");
        this.#failed = status === CHAR("E");
        this.#errorInBatch = false;
      },
      error: (message) => {
        const fields = errorFields(message);
        if (!endsSession(fields)) {
          this.#errorInBatch = true;
          if (this.#requests.awaiting.length === 0) this.#requests.flushAwaiting = false;
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
      this.#requests.awaiting.length = 0;
      if (!("closed" in ending)) this.#fail(ending);
      return;
    }
    const refusal = errorResponse("fields" in ending ? ending.fields : lostFields(ending));
    const answers: Buffer[] = [];
    let failTheRest = false;
    while (this.#requests.awaiting.length > 0) {
      const ends = this.#requests.awaiting.shift();
      if (!this.#inTransaction || ends) {
        failTheRest = true;
        break;
      }
      if (!this.#batchRefused) answers.push(refusal);
      this.#batchRefused = false;
      answers.push(readyForQuery("E"));
    }
    if (!failTheRest && this.#requests.flushAwaiting) {
      if (!this.#inTransaction || this.#requests.batchEnds) failTheRest = true;
      else {
        // The last batch awaits what a Flush asks for (a description, a cursor's rows): refused, postgres.js sends
        // its Sync, which is answered as above without a second error. Never outside a transaction: there no
        // ReadyForQuery would follow to clear the error, and postgres.js would fail its next session with it.
        answers.push(refusal);
        this.#requests.flushAwaiting = false;
        this.#batchRefused = true;
      }
    }
    if (answers.length > 0) this.emit("data", Buffer.concat(answers));
    if (!failTheRest) return;
    this.#requests.clear();
    this.#inTransaction = false;
    this.#batchRefused = false;
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
    if (this.#state === "closed" || this.#requests.awaiting.length > 0 || this.#requests.flushAwaiting) return;
    if (this.#inTransaction || this.#requests.portalOpen) return;
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
