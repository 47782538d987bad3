/**
 * Just enough of PostgreSQL's wire protocol (v3) to watch a connection from its socket: where messages begin and
 * end, and what a few of them say. Every message after the first one a client sends is a type byte and a 32-bit
 * length that counts itself; the client's first one (a startup or cancel request) has the length alone.
 */

/** A message type byte, from its letter. */
export const CHAR = (letter: string) => letter.charCodeAt(0);

/**
 * Reads what a client sends, message by message, handing `visit` the messages whose type is in `types` (each as a
 * view of the bytes, no copy) and skipping the rest. The first message of the stream (startup) has no type and is
 * skipped. A message that a write leaves unfinished waits for the next (postgres.js writes whole messages).
 */
export class ClientStreamReader {
  #pending: Buffer | undefined;
  #first = true;

  constructor(
    readonly types: ReadonlySet<number>,
    readonly visit: (type: number, message: Buffer) => void,
  ) {}

  read(chunk: Buffer): void {
    const data = this.#pending ? Buffer.concat([this.#pending, chunk]) : chunk;
    let offset = 0;
    for (;;) {
      const header = this.#first ? 4 : 5;
      if (data.length - offset < header) break;
      const length = data.readInt32BE(offset + header - 4) + header - 4;
      if (data.length - offset < length) break;
      const type = data[offset] as number;
      if (!this.#first && this.types.has(type)) this.visit(type, data.subarray(offset, offset + length));
      this.#first = false;
      offset += length;
    }
    this.#pending = offset < data.length ? data.subarray(offset) : undefined;
  }
}

/** What a server stream reader reports as it reads. */
export interface ServerMessages {
  /** A message of `type` starts: bytes returned are passed on before it. */
  started(type: number): Buffer | undefined;
  /** A ReadyForQuery's transaction status (`I`, `T` or `E`, as a byte). */
  ready(status: number): void;
  /** An ErrorResponse, whole: true passes it on, false ends the stream there (nothing from it on is passed on). */
  error(message: Buffer): boolean;
}

const ERROR_RESPONSE = 0x45;
const READY_FOR_QUERY = 0x5a;

/**
 * Reads what a server sends as it streams past, in one pass and without copying what it passes on (a result of a
 * million rows, a value of a hundred megabytes): only message headers are read, and each ErrorResponse is held until
 * whole, to be passed on or not. `read` returns the pieces of a chunk to pass on, in order.
 */
export class ServerStreamReader {
  #mode: "type" | "length" | "body" | "error" = "type";
  #type = 0;
  /** The current message's header (type byte and length) as read so far. */
  readonly #header = Buffer.alloc(5);
  #headerFilled = 0;
  /** Bytes of the current message's body still to pass through. */
  #bodyLeft = 0;
  #statusNext = false;
  /** The ErrorResponse being held, and how much of it has come. */
  #held = Buffer.alloc(0);
  #heldFilled = 0;
  #ended = false;

  constructor(readonly messages: ServerMessages) {}

  read(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    let offset = 0;
    /** Where this chunk's bytes to pass on begin; null inside an ErrorResponse, which is held instead. */
    let passFrom: number | null = this.#insideError() ? null : 0;
    while (offset < chunk.length && !this.#ended) {
      if (this.#mode === "type" && offset + 5 <= chunk.length && chunk[offset] !== ERROR_RESPONSE) {
        // The common case, read in place: a whole header in this chunk, of a message that passes on.
        const type = chunk[offset] as number;
        passFrom = this.#insert(this.messages.started(type), chunk, passFrom, offset, out);
        const end = offset + 1 + chunk.readInt32BE(offset + 1);
        if (end <= chunk.length) {
          if (type === READY_FOR_QUERY && end > offset + 5) this.messages.ready(chunk[offset + 5] as number);
          offset = end;
          continue;
        }
        this.#type = type;
        this.#statusNext = type === READY_FOR_QUERY;
        this.#bodyLeft = end - offset - 5;
        this.#mode = "body";
        offset += 5;
      } else if (this.#mode === "type") {
        this.#type = chunk[offset] as number;
        passFrom = this.#insert(this.messages.started(this.#type), chunk, passFrom, offset, out);
        if (this.#type === ERROR_RESPONSE && passFrom !== null) {
          if (offset > passFrom) out.push(chunk.subarray(passFrom, offset));
          passFrom = null;
        }
        this.#header[0] = this.#type;
        this.#headerFilled = 1;
        this.#mode = "length";
        offset++;
      } else if (this.#mode === "length") {
        const step = Math.min(5 - this.#headerFilled, chunk.length - offset);
        chunk.copy(this.#header, this.#headerFilled, offset, offset + step);
        this.#headerFilled += step;
        offset += step;
        if (this.#headerFilled < 5) continue;
        const bodyLength = this.#header.readInt32BE(1) - 4;
        if (this.#type === ERROR_RESPONSE) {
          this.#held = Buffer.alloc(5 + bodyLength);
          this.#header.copy(this.#held);
          this.#heldFilled = 5;
          this.#mode = "error";
        } else {
          this.#bodyLeft = bodyLength;
          this.#statusNext = this.#type === READY_FOR_QUERY;
          this.#mode = bodyLength > 0 ? "body" : "type";
        }
      } else if (this.#mode === "body") {
        if (this.#statusNext) {
          this.#statusNext = false;
          this.messages.ready(chunk[offset] as number);
        }
        const step = Math.min(this.#bodyLeft, chunk.length - offset);
        this.#bodyLeft -= step;
        offset += step;
        if (this.#bodyLeft === 0) this.#mode = "type";
      } else {
        const step = Math.min(this.#held.length - this.#heldFilled, chunk.length - offset);
        chunk.copy(this.#held, this.#heldFilled, offset, offset + step);
        this.#heldFilled += step;
        offset += step;
        if (this.#heldFilled < this.#held.length) continue;
        this.#mode = "type";
        if (this.messages.error(this.#held)) out.push(this.#held);
        else this.#ended = true;
        passFrom = offset;
      }
    }
    if (!this.#ended && passFrom !== null && chunk.length > passFrom) out.push(chunk.subarray(passFrom));
    return out;
  }

  /**
   * The bytes that finish the message the stream stopped in the middle of, as passed on so far (zeros: an empty row,
   * an empty description), so that a reader of what was passed on is at a message boundary again; empty at one. An
   * ErrorResponse being held was passed on in no part, and is dropped.
   */
  finishMessage(): Buffer {
    if (this.#mode === "body") {
      const rest = Buffer.alloc(this.#bodyLeft);
      this.#mode = "type";
      this.#bodyLeft = 0;
      return rest;
    }
    if (this.#mode === "length" && this.#type !== ERROR_RESPONSE) {
      // The length's first bytes went on: the rest make it at least 4 (the length counts itself), then a body.
      const length = Buffer.alloc(4);
      this.#header.copy(length, 0, 1, this.#headerFilled);
      if (length.readInt32BE(0) < 4) length[3] = 4;
      this.#mode = "type";
      return Buffer.concat([length.subarray(this.#headerFilled - 1), Buffer.alloc(length.readInt32BE(0) - 4)]);
    }
    this.#mode = "type";
    return Buffer.alloc(0);
  }

  /** Passes on what came before `offset`, then `inserted`; returns where passing on resumes. */
  #insert(
    inserted: Buffer | undefined,
    chunk: Buffer,
    passFrom: number | null,
    offset: number,
    out: Buffer[],
  ): number | null {
    if (!inserted || passFrom === null) return passFrom;
    if (offset > passFrom) out.push(chunk.subarray(passFrom, offset));
    out.push(inserted);
    return offset;
  }

  #insideError(): boolean {
    return this.#mode === "error" || (this.#mode === "length" && this.#type === ERROR_RESPONSE);
  }
}

/** The fields of an ErrorResponse ('E'), named as postgres.js names them, so an error built from them reads alike. */
const ERROR_FIELDS: Record<string, string> = {
  S: "severity_local",
  V: "severity",
  C: "code",
  M: "message",
  D: "detail",
  H: "hint",
  P: "position",
  W: "where",
  s: "schema_name",
  t: "table_name",
  c: "column_name",
  n: "constraint_name",
  F: "file",
  L: "line",
  R: "routine",
};

/** An ErrorResponse's fields by name. */
export function errorFields(message: Buffer): Record<string, string> {
  const fields: Record<string, string> = {};
  let start = 5;
  for (let index = 5; index < message.length - 1; index++) {
    if (message[index] !== 0) continue;
    const name = ERROR_FIELDS[String.fromCharCode(message[start] as number)];
    if (name) fields[name] = message.toString("utf8", start + 1, index);
    start = index + 1;
  }
  return fields;
}

/** Whether an ErrorResponse ends the session: the server closes the connection right after it. */
export function endsSession(fields: Record<string, string>): boolean {
  const severity = fields.severity ?? fields.severity_local;
  return severity === "FATAL" || severity === "PANIC";
}

/** The zero-terminated strings at the start of a message's body (after its type and length). */
export function leadingStrings(message: Buffer, count: number): string[] {
  const strings: string[] = [];
  let start = 5;
  for (let index = 5; index < message.length && strings.length < count; index++) {
    if (message[index] !== 0) continue;
    strings.push(message.toString("utf8", start, index));
    start = index + 1;
  }
  return strings;
}

/** Whether a statement commits the transaction it runs in: PostgreSQL answers it ROLLBACK in a failed one. */
export function commitsTransaction(text: string): boolean {
  return /^\s*(commit|end|prepare\s+transaction)\b/i.test(text);
}

/** Whether a statement ends the transaction it runs in (a savepoint's rollback does not). */
export function endsTransaction(text: string): boolean {
  return /^\s*(commit|rollback|end|abort|prepare\s+transaction)\b/i.test(text) && !/^\s*rollback\s+to\b/i.test(text);
}

/** An ErrorResponse ('E') carrying `fields` (by the names above). */
export function errorResponse(fields: Record<string, string>): Buffer {
  const letterOf = Object.fromEntries(Object.entries(ERROR_FIELDS).map(([letter, name]) => [name, letter]));
  const parts = Object.entries(fields).flatMap(([name, value]) => {
    const letter = letterOf[name];
    return letter ? [Buffer.from(letter), Buffer.from(value), Buffer.alloc(1)] : [];
  });
  const body = Buffer.concat([...parts, Buffer.alloc(1)]);
  const header = Buffer.alloc(5);
  header.write("E");
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

/** A ReadyForQuery ('Z') with the transaction status `I` (idle), `T` (in a transaction) or `E` (a failed one). */
export function readyForQuery(status: "I" | "T" | "E"): Buffer {
  const message = Buffer.alloc(6);
  message.write("Z");
  message.writeInt32BE(5, 1);
  message.write(status, 5);
  return message;
}

/** What a COMMIT answered ROLLBACK is told instead: PostgreSQL's code for a failed transaction. */
export const COMMIT_ROLLED_BACK = errorResponse({
  severity_local: "ERROR",
  severity: "ERROR",
  code: "25P02",
  message:
    "COMMIT was answered ROLLBACK: the transaction had failed, so nothing of it was kept (guardedConnections). " +
    "A statement of it failed before; behind a transaction pooler, postgres.js needs prepare: false.",
});

/** An ErrorResponse's fields for a session that ended without a word from the server (class 08). */
export function lostFields(ending: { error: Error } | { closed: true }): Record<string, string> {
  const reason = "error" in ending ? ending.error.message : "the server closed the connection";
  return { severity: "ERROR", code: "08006", message: `the connection to the database was lost: ${reason}` };
}

/** SSLRequest: asks the server, before the session starts, whether it speaks TLS (it answers one byte, S or N). */
export const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 4, 210, 22, 47]);

/**
 * The last message of a server's answer to a batch that ends with a Flush: a statement described (RowDescription,
 * NoData), a portal run or suspended (CommandComplete, PortalSuspended). What comes before them (ParseComplete,
 * ParameterDescription, rows) leaves the batch waiting.
 */
export const ANSWERS_FLUSH: ReadonlySet<number> = new Set([CHAR("T"), CHAR("n"), CHAR("C"), CHAR("s")]);
