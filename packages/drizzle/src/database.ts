/**
 * What idemkit's modules know of a Drizzle database, of what runs its statements, and of what each driver's module
 * gives `driver.ts`: types only, so that every module that reads them depends on none of the modules that use them.
 */
import type { SQL } from "drizzle-orm";

/**
 * A Drizzle PostgreSQL database (postgres.js, PGlite, node-postgres, on drizzle-orm 0.41 to 1.0), as far as idemkit
 * uses it: its public query builders and transactions. Described by shape, as Drizzle's own class for it is named
 * differently across its versions.
 */
export interface AnyPgDatabase {
  /** Runs `work` in a transaction: what atomic mode's claim, work and answer share. */
  // biome-ignore lint/suspicious/noExplicitAny: the transaction type is the caller's own, read back by TransactionOf
  transaction(work: (tx: any) => Promise<any>, config?: any): Promise<any>;
  /** Sends one SQL statement: idemkit's savepoints and unprepared statements. */
  execute(query: SQL): PromiseLike<unknown>;
  /** A statement of common table expressions: how each of idemkit's statements is built. */
  // biome-ignore lint/suspicious/noExplicitAny: Drizzle's builder types differ across its versions
  with(...steps: any[]): any;
  /** An update builder: `updateIfVersion`'s. */
  // biome-ignore lint/suspicious/noExplicitAny: Drizzle's builder types differ across its versions
  update(table: any): any;
}

/** What runs a statement: a database or a transaction. */
export type Executor = Pick<AnyPgDatabase, "execute" | "with">;
export type Row = Record<string, unknown>;

/** How idemkit runs a transaction on one database's driver: what each client kind's module gives. */
export interface Transactions {
  /**
   * Runs `work` in one transaction, handing it the transaction Drizzle makes for `db` (which `tx.transaction`
   * nests with savepoints). Resolves once the driver reports the COMMIT done.
   */
  transaction<T>(work: (tx: unknown) => Promise<T>): Promise<T>;
  /**
   * Where the driver may report done a COMMIT that PostgreSQL did not keep (postgres.js 3 with `prepare` on: see
   * `postgres-js.ts`), an SQL expression, true when it will not on a connection to PostgreSQL itself: the
   * transaction's last statement evaluates it in the COMMIT's flight (see `provingCommit`), and where it was false,
   * or the connection is not proved direct, the caller reads back what the transaction wrote before calling it kept.
   * Undefined where every COMMIT the driver reports done was one.
   */
  readonly commitProof?: string | undefined;
  /**
   * Whether idemkit writes its statements' values into their text (see `unprepared` in statements.ts) from the
   * first: where the client prepares nothing (postgres.js with `prepare: false`, what its users behind a pooler
   * set), a statement with parameters would cost two round trips.
   */
  readonly prefersLiterals?: boolean | undefined;
  /**
   * Whether the driver runs a text of several statements, sent without parameters (postgres.js sends it as
   * PostgreSQL's simple query), so that a statement with its values as literals carries a command behind it in its
   * own text (see `Trailing` in statements.ts). node-postgres does not on a client in pipeline mode, nor PGlite.
   */
  readonly runsMultiStatementTexts?: boolean | undefined;
  /** Where the database's statements enter its driver (what the bypass guard watches); undefined for an unknown one. */
  readonly entrances?: Entrances | undefined;
}

/**
 * The driver's client a database was made with, and those of its methods through which Drizzle sends every
 * statement and transaction of the database. `oneConnection` where they all share one connection (PGlite, a pool of
 * one), so that a statement sent through one while a transaction holds it would wait for ever.
 */
export interface Entrances {
  readonly client: object;
  readonly methods: readonly string[];
  readonly oneConnection: boolean;
}
