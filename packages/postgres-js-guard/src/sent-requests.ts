/**
 * What the guard follows of what postgres.js sends, as it passes: the requests owed an answer (each Sync, each
 * simple Query) and whether each ends a transaction (a COMMIT, a ROLLBACK: by its text, or by the name of a statement
 * prepared with such a text), a batch left waiting on a Flush, and a cursor's portal still open.
 */
import { CHAR, ClientStreamReader, commitsTransaction, endsTransaction, leadingStrings } from "./protocol-messages.js";

/** What the guard reads of what postgres.js sends: Parse, Bind, Flush, Sync and simple Query. */
const WATCHED_SENT = new Set([CHAR("P"), CHAR("B"), CHAR("H"), CHAR("S"), CHAR("Q")]);

/** How a batch ends its transaction: not at all, by a rollback, or by a COMMIT (truthy when it ends it). */
export type Ends = 0 | 1 | 2;
export const NOT_ENDING = 0;
const ROLLS_BACK = 1;
export const COMMITS = 2;

function endsOf(text: string): Ends {
  if (!endsTransaction(text)) return NOT_ENDING;
  return commitsTransaction(text) ? COMMITS : ROLLS_BACK;
}

/** The requests postgres.js sent on one connection that are owed an answer, and what they do to its transaction. */
export class SentRequests {
  /** For each request awaiting its ReadyForQuery (a Sync, a simple Query): how it ends a transaction, if it does. */
  readonly awaiting: Ends[] = [];
  /** How the statements sent since the last Sync end a transaction, if they do. */
  batchEnds: Ends = NOT_ENDING;
  /** The last batch sent ends with a Flush, and nothing came back for it yet (a describe, or a cursor's rows). */
  flushAwaiting = false;
  /** A cursor's portal is suspended between two fetches: its code will send more before it ends. */
  portalOpen = false;
  /**
   * The names of the prepared statements that end a transaction (postgres.js prepares COMMIT once per connection and
   * binds it by name after), as the bytes a Bind carries them in, to be found without decoding every Bind.
   */
  readonly #endingStatements: Buffer[] = [];
  /** Those of them that commit. */
  readonly #committingStatements: Buffer[] = [];
  /** Whether the unnamed statement last parsed (what a connection without prepared statements binds) ends one. */
  #unnamedEnds: Ends = NOT_ENDING;
  readonly #reader = new ClientStreamReader(WATCHED_SENT, (type, message) => this.#message(type, message));

  /** Reads what postgres.js just wrote to the socket (whole messages or parts of them, as they come). */
  read(bytes: Buffer): void {
    this.#reader.read(bytes);
  }

  /** Follows what postgres.js sends: the requests owed an answer, and the statements that end a transaction. */
  #message(type: number, message: Buffer): void {
    if (type === CHAR("P")) {
      const [name = "", text = ""] = leadingStrings(message, 2);
      const ends = endsOf(text);
      // A statement described before it is bound (postgres.js's first use of it) ends the transaction as it is sent.
      if (ends) this.batchEnds = ends;
      if (name === "") this.#unnamedEnds = ends;
      else if (ends) {
        this.#endingStatements.push(Buffer.from(`${name}\0`));
        if (ends === COMMITS) this.#committingStatements.push(Buffer.from(`${name}\0`));
      }
    } else if (type === CHAR("B")) {
      if (bindsUnnamed(message)) {
        if (this.#unnamedEnds) this.batchEnds = this.#unnamedEnds;
      } else if (bindsOneOf(message, this.#endingStatements)) {
        this.batchEnds = bindsOneOf(message, this.#committingStatements) ? COMMITS : ROLLS_BACK;
      }
    } else if (type === CHAR("H")) {
      this.flushAwaiting = true;
    } else {
      const ends = this.batchEnds || (type === CHAR("Q") ? endsOf(leadingStrings(message, 1)[0] ?? "") : NOT_ENDING);
      this.awaiting.push(ends);
      this.batchEnds = NOT_ENDING;
      this.flushAwaiting = false;
      this.portalOpen = false;
    }
  }

  /** Nothing is owed any more: the connection failed what was. */
  clear(): void {
    this.awaiting.length = 0;
    this.portalOpen = false;
    this.flushAwaiting = false;
    this.batchEnds = NOT_ENDING;
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
