/**
 * Keeps a lease-mode call's lease alive while its procedure runs. The lease only exists to bound a call that
 * crashed; a live call that is slower than `leaseMs` must not be taken over (and so run twice) while it still
 * works. So the lease is renewed every third of `leaseMs`, under the call's fence, up to `maxHoldMs` after the
 * claim, when a hung call is let go like a crashed one.
 *
 *   claim ──▶ renew ──▶ renew ──▶ … ──▶ (maxHoldMs) no more renewals ──▶ lease ends: signal aborts, takeover possible
 *               └─ refused (another fence holds the key) ──▶ signal aborts at once
 *
 * The procedure gets the signal, so work whose result can no longer be stored stops instead of running on.
 */
import type { IdempotencyStore, RecordId } from "./store.js";

export interface LeaseKeeperOptions {
  store: Pick<IdempotencyStore<unknown>, "renew">;
  id: RecordId;
  fence: number;
  /** The lease length each renewal grants, in ms. */
  leaseMs: number;
  /** When the lease taken by the claim ends, in ms since the epoch. */
  leaseExpiresAt: number;
  /** The longest the call may hold its key through renewals, in ms from now. */
  maxHoldMs: number;
  now: () => number;
}

export interface LeaseKeeper {
  /** Aborts when the lease is lost: taken over, or run out after the last renewal. */
  readonly signal: AbortSignal;
  /** Stops renewing (the call settled). */
  stop(): void;
}

/** Starts renewing; call `stop()` once the procedure settled. */
export function keepLease({
  store,
  id,
  fence,
  leaseMs,
  leaseExpiresAt,
  maxHoldMs,
  now,
}: LeaseKeeperOptions): LeaseKeeper {
  const controller = new AbortController();
  const holdEndsAt = now() + maxHoldMs;
  let leaseEndsAt = leaseExpiresAt;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  const lose = (reason: string) => {
    if (!stopped) controller.abort(new Error(`The lease of ${id.path} was lost: ${reason}.`));
    stopped = true;
  };
  const next = () => {
    if (stopped) return;
    const at = now();
    if (leaseEndsAt >= holdEndsAt) {
      timer = setTimeout(() => lose(`held for maxHoldMs (${maxHoldMs} ms)`), Math.max(0, leaseEndsAt - at));
      return;
    }
    timer = setTimeout(renew, Math.max(1, Math.min(leaseMs / 3, leaseEndsAt - at)));
  };
  const renew = async () => {
    const until = Math.min(now() + leaseMs, holdEndsAt);
    try {
      // The fence decides, not the clock: a late renewal still holds the key if nobody took it over meanwhile.
      if (!(await store.renew(id, fence, until))) return lose("another request took the key over");
      leaseEndsAt = until;
    } catch {
      // The store is unreachable: keep trying while the lease lasts.
      if (now() >= leaseEndsAt) return lose("the store could not renew it before it ran out");
    }
    next();
  };

  next();
  return {
    signal: controller.signal,
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
