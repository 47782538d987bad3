/**
 * Keeps a lease-mode call's lease alive while its procedure runs. The lease only exists to bound a call that
 * crashed; a live call that is slower than `leaseMs` must not be taken over (and so run twice) while it still
 * works. So the lease is renewed every third of `leaseMs`, under the call's fence, up to `maxHoldMs` after the
 * claim, when a hung call is let go like a crashed one.
 *
 *   claim ──▶ renew ──▶ renew ──▶ … ──▶ (maxHoldMs) no more renewals ──▶ lease ends: signal aborts, takeover possible
 *               └─ refused (another fence holds the key) ──▶ signal aborts at once
 *
 * The signal also aborts when the lease runs out because renewals failed or never answered (a hung store): from
 * then on another request may take the key over. The procedure gets the signal, so work whose result can no
 * longer be stored stops instead of running on.
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
  /** Aborts when the lease is lost: taken over, or run out after the last renewal that got through. */
  readonly signal: AbortSignal;
  /** When the lease ends as far as this call knows, in ms since the epoch. */
  readonly leaseEndsAt: number;
  /** Stops renewing (the call settled). */
  stop(): void;
}

/** Starts renewing; call `stop()` as soon as the procedure settled. */
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
  let renewal: ReturnType<typeof setTimeout> | undefined;
  let expiry: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  const stop = () => {
    stopped = true;
    clearTimeout(renewal);
    clearTimeout(expiry);
  };
  const lose = (reason: string) => {
    if (stopped) return;
    stop();
    controller.abort(new DOMException(`The lease of ${id.path} was lost: ${reason}.`, "AbortError"));
  };
  /** Whatever renewals do, the signal aborts when the lease this call knows of ends. */
  const armExpiry = () => {
    clearTimeout(expiry);
    const reason = leaseEndsAt >= holdEndsAt ? `held for maxHoldMs (${maxHoldMs} ms)` : "no renewal got through";
    expiry = setTimeout(() => lose(reason), Math.max(0, leaseEndsAt - now()));
  };
  const scheduleRenewal = () => {
    if (stopped || leaseEndsAt >= holdEndsAt) return;
    renewal = setTimeout(renew, Math.max(1, Math.min(leaseMs / 3, leaseEndsAt - now())));
  };
  const renew = async () => {
    const until = Math.min(now() + leaseMs, holdEndsAt);
    try {
      // The fence decides, not the clock: a late renewal still holds the key if nobody took it over meanwhile.
      if (!(await store.renew(id, fence, until))) return lose("another request took the key over");
      if (stopped) return;
      leaseEndsAt = until;
      armExpiry();
    } catch {
      // The store is unreachable: try again soon; the expiry timer aborts if the lease runs out first.
    }
    scheduleRenewal();
  };

  armExpiry();
  scheduleRenewal();
  return {
    signal: controller.signal,
    get leaseEndsAt() {
      return leaseEndsAt;
    },
    stop,
  };
}
