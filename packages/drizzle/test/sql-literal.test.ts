/**
 * The literals of idemkit's unprepared statements, read by a real PostgreSQL in every client encoding it accepts,
 * with `backslash_quote = on` (what lets a multibyte character's trailing backslash byte end a literal): each value
 * reads back as exactly its characters, and none reaches outside its quotes.
 */
import { createDatabase } from "@idemkit/testkit";
import fc from "fast-check";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sqlLiteral, UnwritableValueError } from "../src/sql-literal.js";

let database: Awaited<ReturnType<typeof createDatabase>>;
let client: postgres.Sql;
let encodings: string[];

beforeAll(async () => {
  database = await createDatabase(inject("postgresUrl"));
  client = postgres(database.url, { max: 1, onnotice: () => {} });
  const known = await client.unsafe<{ name: string }[]>(
    "select distinct pg_encoding_to_char(n) as name from generate_series(0, 63) as n where pg_encoding_to_char(n) <> ''",
  );
  encodings = [];
  for (const { name } of known) {
    // The ones a UTF8 server cannot convert to (MULE_INTERNAL, say) are refused by SET itself: no app can use them.
    const accepted = await client.unsafe(`set client_encoding = '${name}'`).then(
      () => true,
      () => false,
    );
    if (accepted) encodings.push(name);
  }
  await client.unsafe("reset client_encoding");
});
afterAll(async () => {
  await client?.end();
  await database?.drop();
});

/** What the server reads `text` as, in UTF-8 hex: ASCII both ways, so the connection's encoding cannot blur it. */
async function readBack(text: string, encoding: string): Promise<string> {
  await client.unsafe(`set client_encoding = '${encoding}'`);
  await client.unsafe("set backslash_quote = on");
  const [row] = await client.unsafe<{ hex: string }[]>(
    `select encode(convert_to(${sqlLiteral(text)}::text, 'UTF8'), 'hex') as hex`,
  );
  return (row as { hex: string }).hex;
}

const utf8Hex = (text: string) => Buffer.from(text, "utf8").toString("hex");

/** Any Unicode scalar value but U+0000, with the characters that break quoting often among them. */
const character = fc.oneof(
  fc.constantFrom("'", "\\", '"', "$", "$$", "\u0215", "\u00a5", "\u8868", "\uff3c", "\n", "\r", "\t", "\x7f"),
  fc
    .integer({ min: 1, max: 0x10ffff })
    .filter((code) => code < 0xd800 || code > 0xdfff)
    .map((code) => String.fromCodePoint(code)),
);
const text = fc.array(character, { maxLength: 40 }).map((chars) => chars.join(""));

describe("sqlLiteral", () => {
  it("writes printable ASCII only", () => {
    fc.assert(fc.property(text, (value) => /^[\x20-\x7e]*$/.test(sqlLiteral(value))));
  });

  it("is accepted by every client encoding the server takes, the multibyte ones included", () => {
    expect(encodings).toEqual(expect.arrayContaining(["UTF8", "SJIS", "BIG5", "GBK", "GB18030", "UHC", "LATIN1"]));
  });

  it("reads back as the same characters in every client encoding, with backslash_quote on", async () => {
    for (const encoding of encodings) {
      await fc.assert(
        fc.asyncProperty(text, async (value) => {
          expect(await readBack(value, encoding)).toBe(utf8Hex(value));
        }),
        { numRuns: 25 },
      );
    }
  });

  it("keeps the value that broke out of a literal under SJIS inside its quotes", async () => {
    const breakOut = "\u0215\\'INJECTED";
    for (const encoding of ["SJIS", "BIG5", "GBK", "GB18030", "UHC"]) {
      expect(await readBack(breakOut, encoding)).toBe(utf8Hex(breakOut));
    }
  });

  it("refuses U+0000 and lone surrogates before anything is sent", () => {
    for (const value of ["a\u0000b", "a\ud800b", "a\udfffb", ["ok", "\u0000"]]) {
      expect(() => sqlLiteral(value)).toThrow(UnwritableValueError);
    }
  });

  it("writes numbers as PostgreSQL reads them, Infinity included", async () => {
    const numbers = [1.5, -2, 2 ** 53, 1e21, 5e-324, -0, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
    await client.unsafe("reset client_encoding");
    const [row] = await client.unsafe<{ written: number[] }[]>(
      `select array[${numbers.map((value) => `${sqlLiteral(value)}::float8`).join(", ")}] as written`,
    );
    expect(row?.written).toEqual(numbers.map((value) => (Object.is(value, -0) ? 0 : value)));
  });
});
