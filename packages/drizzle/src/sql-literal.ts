/**
 * Values written into SQL text, for the statements idemkit sends unprepared (behind a transaction pooler, see
 * `statements.ts`). The text is printable ASCII by construction: every other character, control characters
 * included, is a `\uXXXX` or `\UXXXXXXXX` escape inside an escape string (`E'…'`). PostgreSQL reads a statement in
 * the connection's `client_encoding`, and in the multibyte ones an app may set (SJIS, BIG5, GBK, GB18030, UHC) a
 * byte of a character can be a backslash or a quote; with `backslash_quote = on` that lets a value end its literal.
 * ASCII is the same bytes in every encoding PostgreSQL accepts, so no value can reach outside its quotes, and each
 * reads back as the same characters whatever the encoding.
 *
 * What PostgreSQL's text cannot hold at all (U+0000, a lone surrogate half) is refused here rather than sent: a NUL
 * would cut the statement short on the wire, which the server answers as a broken message.
 */

/** Why a value cannot be written into a statement: a programming error of the caller, never the database's. */
export class UnwritableValueError extends TypeError {
  override readonly name = "UnwritableValueError";
}

const PRINTABLE_ASCII_MAX = 0x7e;
const PRINTABLE_ASCII_MIN = 0x20;

/**
 * `value` as a PostgreSQL literal: text, numbers (non-finite ones as the float8 words), booleans, null, and arrays of
 * them. The statement's own casts (`$1::text`) give each its type, as they do to a parameter.
 */
export function sqlLiteral(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "boolean") return String(value);
  if (typeof value === "bigint") return `(${value})`;
  if (typeof value === "number") return Number.isFinite(value) ? `(${value})` : `'${value}'`;
  if (Array.isArray(value)) return value.length === 0 ? "'{}'" : `array[${value.map(sqlLiteral).join(", ")}]`;
  if (typeof value === "string") return escapeString(value);
  throw new UnwritableValueError(`idemkit cannot write a ${typeof value} into a statement.`);
}

/** `text` as an escape string constant of printable ASCII. */
function escapeString(text: string): string {
  let out = "E'";
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (code === 0x5c) out += "\\\\";
    else if (code === 0x27) out += "''";
    else if (code >= PRINTABLE_ASCII_MIN && code <= PRINTABLE_ASCII_MAX) out += char;
    else out += unicodeEscape(code);
  }
  return `${out}'`;
}

function unicodeEscape(code: number): string {
  if (code === 0) throw new UnwritableValueError("PostgreSQL's text cannot hold U+0000, so idemkit never sends it.");
  if (code >= 0xd800 && code <= 0xdfff) {
    throw new UnwritableValueError(
      `A lone surrogate (U+${hex(code, 4)}) is not Unicode text; PostgreSQL cannot store it as written.`,
    );
  }
  return code <= 0xffff ? `\\u${hex(code, 4)}` : `\\U${hex(code, 8)}`;
}

function hex(code: number, width: number): string {
  return code.toString(16).toUpperCase().padStart(width, "0");
}
