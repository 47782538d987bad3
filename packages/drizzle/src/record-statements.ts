/**
 * The records' statements: fixed SQL texts over the idempotency_keys table (or one made like it), their
 * parameters, and what a row of theirs is as a record.
 */

import type { RecordId } from "@idemkit/core";
import { sha256Hex } from "@idemkit/core/internal";
import type { ClaimRequest, StoredRecord } from "@idemkit/core/store";
import { RecordState } from "@idemkit/core/store";
import type { Row, Transactions } from "./database.js";
import { named } from "./statement-text.js";
import type { Trailing } from "./statements.js";

/** A record's columns as statements read them, times as epoch milliseconds: each name, and what it is read as. */
const RECORD_FIELDS = {
  state: "state",
  fingerprint: "fingerprint",
  fence: "fence",
  lease_expires_ms: "(extract(epoch from lease_expires_at) * 1000)::float8",
  expires_ms: "(extract(epoch from expires_at) * 1000)::float8",
  response_status: "response_status",
  response_body: "response_body",
};
const RECORD_COLUMN_NAMES = Object.keys(RECORD_FIELDS);
const RECORD_COLUMNS = Object.entries(RECORD_FIELDS)
  .map(([name, read]) => (name === read ? name : `${read} as ${name}`))
  .join(", ");
/** $1, $2, $3: the record id. */
const KEY_MATCH = "scope = $1::text and path = $2::text and key = $3::text";
/**
 * The advisory lock (one 64-bit number) that an atomic claim holds on its record id until its transaction ends, so
 * that a duplicate learns at once that the key is held instead of waiting on the row. It is seeded with the table's
 * name, so two stores' tables never share a lock. Two ids whose hashes collide (or an app's own advisory lock on the
 * same number) behave as one key while both are held: the later one waits, and is answered 409 if the earlier one
 * outlasts its `waitMs`; no answer is ever mixed up, as records are still found by their id.
 */
function keyLock(table: string): string {
  const seed = BigInt.asIntN(64, BigInt(`0x${sha256Hex(table).slice(0, 16)}`));
  return `hashtextextended(concat_ws(chr(31), $1::text, $2::text, $3::text), ${seed})`;
}

/**
 * Sets `setting` (a timeout) for the rest of the transaction to `ms` when that is shorter than what it is now (0:
 * none), and leaves it when `ms` is null.
 */
function boundedBy(setting: string, ms: string): string {
  const now = `current_setting('${setting}')`;
  return `set_config('${setting}', case when ${ms}::float8 is not null
      and (${now}::interval = interval '0' or ${now}::interval > ${ms}::float8 * interval '1 millisecond')
    then ceil(${ms}::float8)::bigint || 'ms' else ${now} end, true)`;
}

/**
 * The store's statements over `table` (the qualified, quoted name). Their texts are fixed per table, so each is
 * prepared once per connection under its name, which carries a hash of its text (see `named`).
 */
export function statementsFor(table: string) {
  const lock = keyLock(table);
  const statements = {
    /**
     * $4 fingerprint, $5 lease end, $6 expiry, $7 lock_timeout, $8 whether to take the key's advisory lock (atomic
     * mode), $9 in atomic mode how much longer the transaction may last, in ms (null: no bound). One row back:
     * `claimed_fence` when the insert won; `free` false when another transaction holds the lock (nothing
     * inserted); the conflicting row as this statement's snapshot sees it (nulls when none, or when it committed
     * after the snapshot).
     *
     * The transaction's bound is PostgreSQL's as well as the engine's, for the rest of the transaction: no
     * statement of it runs longer (`statement_timeout`), so that one the engine gave up on does not hold the key's
     * lock and its rows past it. A shorter setting of the app's own is kept. Set here rather than as a connection
     * setting, which a transaction pooler refuses. Idle time is not bounded here: PostgreSQL ends the whole
     * connection for it, under a transaction whose procedure is still running.
     */
    CLAIM: {
      name: "idemkit_claim",
      steps: {
        previous: `select current_setting('lock_timeout') as lock_timeout, set_config('lock_timeout', $7::text, true),
          ${boundedBy("statement_timeout", "$9")},
          (not $8::bool or pg_try_advisory_xact_lock(${lock})) as free`,
        inserted: `insert into ${table} (scope, path, key, fingerprint, state, lease_expires_at, expires_at)
          select $1::text, $2::text, $3::text, $4::text, 'in_progress',
                 to_timestamp($5::float8 / 1000), to_timestamp($6::float8 / 1000)
          from previous where previous.free
          on conflict (scope, path, key) do nothing
          returning fence`,
        existing: `select ${RECORD_COLUMNS} from ${table} where ${KEY_MATCH} and not exists (select 1 from inserted)`,
      },
      text: `select (select fence from inserted) as claimed_fence, previous.free, existing.*,
             set_config('lock_timeout', previous.lock_timeout, true) as restored
      from previous left join existing on true`,
      columns: ["claimed_fence", "free", ...RECORD_COLUMN_NAMES, "restored"],
    },

    /**
     * Whether a transaction holds the key's lock now, and the record as committed. One row back. Outside a
     * transaction the lock is tried for this statement only, and shared, so that reads never see each other as the
     * holder; a claim that tries it in that instant finds the key busy and looks again after a short pause.
     */
    PEEK: {
      name: "idemkit_peek",
      text: `select not pg_try_advisory_xact_lock_shared(${lock}) as running, record.*
      from (select 1) as one left join (select ${RECORD_COLUMNS} from ${table} where ${KEY_MATCH}) as record on true`,
      columns: ["running", ...RECORD_COLUMN_NAMES],
    },

    GET: {
      name: "idemkit_get",
      text: `select ${RECORD_COLUMNS} from ${table} where ${KEY_MATCH}`,
      columns: RECORD_COLUMN_NAMES,
    },

    /**
     * $4 fingerprint, $5 lease end, $6 expiry, $7 lock_timeout, $8 the fence the caller saw: replaced only if nobody
     * else did first (one row back either way; `fence` null when not replaced). Like the claim, it bounds its wait for a row that another transaction holds (one that replaced
     * it first and runs its procedure) by lock_timeout, set for this statement only.
     */
    REPLACE: {
      name: "idemkit_replace",
      steps: {
        previous: "select current_setting('lock_timeout') as lock_timeout, set_config('lock_timeout', $7::text, true)",
        replaced: `update ${table}
          set fingerprint = $4::text, state = 'in_progress', fence = default,
              lease_expires_at = to_timestamp($5::float8 / 1000), expires_at = to_timestamp($6::float8 / 1000),
              response_status = null, response_body = null, created_at = now()
          where ${KEY_MATCH} and fence = $8::bigint and exists (select 1 from previous)
          returning fence`,
      },
      text: `select replaced.fence, set_config('lock_timeout', previous.lock_timeout, true) as restored
      from previous left join replaced on true`,
      columns: ["fence", "restored"],
    },

    /** $4 expiry, $5 status, $6 body, $7 fence. */
    COMPLETE: {
      name: "idemkit_complete",
      text: `update ${table}
      set state = 'completed', lease_expires_at = null, expires_at = to_timestamp($4::float8 / 1000),
          response_status = $5::int, response_body = $6::text
      where ${KEY_MATCH} and fence = $7::bigint and state = 'in_progress'
      returning 1 as done`,
      columns: ["done"],
    },

    /** $4 fence. One row back when the record is completed under that fence: what its transaction's COMMIT kept. */
    KEPT: {
      name: "idemkit_kept",
      text: `select 1 as kept from ${table} where ${KEY_MATCH} and fence = $4::bigint and state = 'completed'`,
      columns: ["kept"],
    },

    /** $4 fence. */
    RELEASE: {
      name: "idemkit_release",
      text: `delete from ${table} where ${KEY_MATCH} and fence = $4::bigint and state = 'in_progress' returning 1 as done`,
      columns: ["done"],
    },

    /** $4 fence, $5 the new lease end. */
    RENEW: {
      name: "idemkit_renew",
      text: `update ${table} set lease_expires_at = to_timestamp($5::float8 / 1000)
      where ${KEY_MATCH} and fence = $4::bigint and state = 'in_progress' returning 1 as done`,
      columns: ["done"],
    },

    /** $1 now, $2 batch size. SKIP LOCKED: purge never waits on (or blocks) a request that holds a row. */
    PURGE: {
      name: "idemkit_purge",
      steps: {
        doomed: `select scope, path, key from ${table}
          where expires_at <= to_timestamp($1::float8 / 1000)
            and (state = 'completed' or lease_expires_at <= to_timestamp($1::float8 / 1000))
          limit $2::int
          for update skip locked`,
        deleted: `delete from ${table} as t using doomed
          where t.scope = doomed.scope and t.path = doomed.path and t.key = doomed.key
          returning 1`,
      },
      text: "select count(*)::int as deleted from deleted",
      columns: ["deleted"],
    },
  };
  return named(statements);
}

/**
 * Set right after the claim, inside the claiming transaction: undoing the procedure's writes (an error answer)
 * rolls back to here, which keeps the claim.
 */
const SAVEPOINT = "savepoint idemkit_claim";

/** The savepoint as atomic mode sends it behind a claim, on a database whose driver is `driver` (see `Trailing`). */
export function claimSavepoint(driver: Pick<Transactions, "runsMultiStatementTexts">): Trailing {
  return { text: SAVEPOINT, inOneText: driver.runsMultiStatementTexts === true };
}
export const UNDO = "rollback to savepoint idemkit_claim";

export function keyOf({ scope, path, key }: RecordId): unknown[] {
  return [scope, path, key];
}

/**
 * The claim's parameters but the last two (whether atomic, and its transaction's bound): it waits on a held row for
 * what is left of the duplicate's wait, else `waitMs`.
 */
export function claimParams(request: ClaimRequest, waitMs: number): unknown[] {
  const { id, fingerprint, leaseExpiresAt, expiresAt } = request;
  const lockTimeout = `${Math.max(1, Math.round(request.waitMs ?? waitMs))}ms`;
  return [...keyOf(id), fingerprint, leaseExpiresAt, expiresAt, lockTimeout];
}

export function toRecord(row: Row): StoredRecord {
  const base = {
    fingerprint: String(row.fingerprint),
    fence: Number(row.fence),
    expiresAt: Number(row.expires_ms),
  };
  if (row.state === RecordState.COMPLETED) {
    return {
      state: RecordState.COMPLETED,
      ...base,
      response: { status: Number(row.response_status), body: String(row.response_body) },
    };
  }
  return { state: RecordState.IN_PROGRESS, ...base, leaseExpiresAt: Number(row.lease_expires_ms) };
}
