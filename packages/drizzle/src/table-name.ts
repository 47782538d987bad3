/**
 * A table as a command's option names it (`--table`, `--processed-table`): `name`, or `schema.name` for a table in
 * a schema the search path may not reach. The one reader of such a name for every PostgreSQL command of idemkit's
 * (`idemkit`, `idemkit-purge`, `idemkit-outbox`, `idemkit-outbox-purge`), so that each takes the same names, refuses
 * the same ones with the same words, and reaches the same table whether it reads with SQL of its own or through a
 * Drizzle table.
 */
import { PgSchema } from "drizzle-orm/pg-core";
import { quoteIdentifier } from "./statement-text.js";

/**
 * One part of the name: what PostgreSQL takes unquoted, in ASCII, within its 63 bytes (a longer one it would cut
 * short, and name another table). Quotes are refused rather than read: a name in quotes is one a shell, a cron line
 * and PostgreSQL each read differently.
 */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A table as its option names it. */
export interface TableName {
  /** As given: `name`, or `schema.name`. */
  name: string;
  /** Quoted for SQL, part by part. */
  sql: string;
  /** The Drizzle table `make` (`idempotencyKeysTable`, `outboxEventsTable`) builds under this name. */
  of<TTable>(make: (name: string, schema?: PgSchema) => TTable): TTable;
}

/** `text`, given to `--<option>`, as a table's name; or, when it is not one, what is wrong with it, naming the option. */
export function tableNameOf(option: string, text: string): TableName | string {
  const dot = text.indexOf(".");
  const schema = dot < 0 ? undefined : text.slice(0, dot);
  const table = text.slice(dot + 1);
  // A second dot stays in `table`, which IDENTIFIER then refuses, as it does an empty part.
  const parts = schema === undefined ? [table] : [schema, table];
  if (!parts.every((part) => IDENTIFIER.test(part))) {
    return `--${option} "${text}" is not a table name: give NAME or SCHEMA.NAME, each of letters, digits and _`;
  }
  return {
    name: text,
    sql: parts.map(quoteIdentifier).join("."),
    of(make) {
      // Drizzle's pgSchema() refuses "public"; its class takes it, and a table named public.x must stay qualified,
      // or a search path that lists another schema first would lead the command to that schema's table.
      return make(table, schema === undefined ? undefined : new PgSchema(schema));
    },
  };
}
