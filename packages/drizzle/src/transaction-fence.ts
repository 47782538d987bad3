/**
 * Statements through an idempotent transaction after it is over. A procedure can outlive its transaction: the
 * engine stopped waiting for it (a deadline passed), or the driver gave the transaction up when its connection
 * died. If it then goes on writing through `tx`, the statements reach a connection that is no longer in that
 * transaction: node-postgres sends them behind its ROLLBACK and then on a pooled client (or on a single `Client`,
 * outside any transaction), postgres.js on the connection it has handed back to the pool. There they commit one by
 * one, outside the transaction that was to undo them, and a request answered "nothing was kept" would have kept
 * something. So they are refused:
 *
 *   open ──callback ended, or the driver gave the transaction up──▶ closed: nothing goes through `tx`
 *
 * The procedure is handed the transaction behind a fence: a Proxy that passes everything through while the
 * transaction is open, and that follows what it hands out (query builders, prepared queries, `tx.query`'s
 * relational builders, savepoints through `tx.transaction`), so that a statement built while open and sent after is
 * refused too. A statement is sent when it is awaited (`then`) or executed: that is where the fence is checked. The
 * driver's own COMMIT or ROLLBACK goes through Drizzle's session, not through the fence.
 *
 * idemkit's own statements (the claim, the savepoint, the completion) need no Proxy: each is built and sent in one
 * step (`run` and `command` in statements.ts), so one check of the fence as it is built holds for its sending too.
 * They go through `own`, which is `tx` itself behind that check: the Proxy's traps on every builder step cost more
 * than a statement's own rendering.
 */
import type { Executor } from "./database.js";

export interface TransactionFence<TTx extends object> {
  /** What the procedure writes with: `tx`, refusing every statement once closed. */
  readonly tx: TTx;
  /** What idemkit's own statements run through: `tx` unwrapped, refusing each statement once closed. */
  readonly own: Executor;
  /** The transaction is over (its callback ended, or the driver gave it up): nothing more goes through. */
  close(): void;
}

function refusal(): Error {
  return new Error(
    "idemkit: this idempotent transaction is over (committed, rolled back or timed out), so this statement " +
      "would run outside it; nothing more can be written through it.",
  );
}

/**
 * What each fence stands in front of, by the object it hands out instead (a Proxy, or `own`): so that what idemkit
 * keys by a database's own objects (see `databaseOf` in named-databases.ts) is found through a fenced transaction too.
 */
const fronts = new WeakMap<object, object>();

/** The object `value` stands in front of, if it is a fence's; else `value`. */
export function unfenced(value: object): object {
  return fronts.get(value) ?? value;
}

/** Fences `tx`: see the file's comment. */
export function fenceTransaction<TTx extends Executor>(tx: TTx): TransactionFence<TTx> {
  let open = true;
  const fenced = new WeakMap<object, object>();
  const opened = () => {
    if (!open) throw refusal();
  };

  /** `value` behind the fence when it is something statements are built or sent through, else as it is. */
  function follow(value: unknown): unknown {
    // A promise's statement was sent already.
    if (typeof value !== "object" || value === null || value instanceof Promise) return value;
    let proxy = fenced.get(value);
    if (!proxy) {
      proxy = new Proxy(value, {
        get(target, property) {
          const member = Reflect.get(target, property, target) as unknown;
          // A class is a type, not a statement: Drizzle's `is()` reads it.
          if (property === "constructor") return member;
          if (isFixed(target, property)) return member;
          if (typeof member !== "function") return follow(member);
          return function fencedMember(...args: unknown[]) {
            if (!open) {
              if (!SENDS.has(property)) throw refusal();
              // A send answers as a statement would: a promise, rejected, with the caller's handlers on it.
              const refused = Promise.reject(refusal());
              if (property === "execute") {
                // Handed back bare, and made before the caller could attach anything: handled here, so that one held
                // unawaited (Drizzle's `execute` of SQL sends nothing until awaited) is no unhandled rejection.
                // Awaiting it still throws the refusal.
                refused.catch(() => {});
                return refused;
              }
              return (refused as unknown as Record<string | symbol, (...rest: unknown[]) => unknown>)[property]?.(
                ...args,
              );
            }
            if (property === "transaction" && typeof args[0] === "function") {
              const work = args[0] as (nested: object) => unknown;
              args[0] = (nested: object) => work(follow(nested) as object);
            }
            return follow((member as (...rest: unknown[]) => unknown).apply(target, args));
          };
        },
      });
      fenced.set(value, proxy);
      fronts.set(proxy, value);
    }
    return proxy;
  }

  const own: Executor = {
    execute(query) {
      opened();
      return tx.execute(query);
    },
    with(...steps) {
      opened();
      return tx.with(...steps);
    },
  };
  fronts.set(own, tx);
  return {
    tx: follow(tx) as TTx,
    own,
    close() {
      open = false;
    },
  };
}

/** What sends a statement: awaiting it, its promise's other handlers, or executing it (a prepared query's too). */
const SENDS = new Set<string | symbol>(["then", "catch", "finally", "execute"]);

/** A property a Proxy must hand out as it is: one that can be neither written nor redefined. */
function isFixed(target: object, property: string | symbol): boolean {
  const descriptor = Reflect.getOwnPropertyDescriptor(target, property);
  return descriptor !== undefined && !descriptor.configurable && !descriptor.writable;
}
