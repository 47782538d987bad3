/**
 * Just enough of PostgreSQL's wire protocol (v3) to watch a connection from its socket: where messages begin and
 * end, and what a few of them say. Every message after the first one a client sends is a type byte and a 32-bit
 * length that counts itself; the client's first one (a startup or cancel request) has the length alone.
 */

/** Splits a byte stream into whole messages, keeping a partial one for the next chunk. */
export class MessageSplitter {
  #pending: Buffer | undefined;
  #untypedFirst: boolean;

  /** `untypedFirst`: the stream's first message has no type byte (what a client sends first). */
  constructor({ untypedFirst = false } = {}) {
    this.#untypedFirst = untypedFirst;
  }

  /** The whole messages `chunk` completes, in order, and the bytes they span (to pass on as they came). */
  push(chunk: Buffer): { messages: Buffer[]; bytes: Buffer } {
    const data = this.#pending ? Buffer.concat([this.#pending, chunk]) : chunk;
    const messages: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const header = this.#untypedFirst ? 4 : 5;
      if (data.length - offset < header) break;
      const length = data.readInt32BE(offset + header - 4) + header - 4;
      if (data.length - offset < length) break;
      messages.push(data.subarray(offset, offset + length));
      offset += length;
      this.#untypedFirst = false;
    }
    this.#pending = offset < data.length ? data.subarray(offset) : undefined;
    return { messages, bytes: data.subarray(0, offset) };
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
