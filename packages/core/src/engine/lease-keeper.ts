/**
 * Keeps a lease-mode call's lease alive while its procedure runs. The lease only exists to bound a call that
 * crashed; a live call that is slower than `leaseMs` must not be taken over (and so run twice) while it still
 * works. So the lease is renewed every third of `leaseMs`, under the call's fence, up to `maxHoldMs` after the
 * claim, when a hung call is let go like a crashed one.
 *
 *   claim ──▶ renew ──▶ renew ──▶ … ──▶ (maxHoldMs) no more renewals ──▶ lease ends: signal aborts, takeover possible
 *               └─ refused (another fence holds the key) ──▶ signal aborts at once
 *
 * Each renewal is bounded: by `storeTimeoutMs`, and by half of what is left of the lease, so that a statement that
 * never settles (a driver can leave one so after a server crash) cannot hold up the renewals behind it, and a
 * failed or timed-out renewal is tried again while the lease still lasts. A renewal that answers after its bound
 * still counts: the fence decides, not the clock.
 *
 * The signal also aborts when the lease runs out because renewals failed or never answered (a hung store): from
 * then on another request may take the key over. The procedure gets the signal, so work whose result can no
 * longer be stored stops instead of running on.
 */
import { within } from "../deadline.js";
import type { IdempotencyStore, RecordId } from "../store.js";

/** Renewals that may wait for an answer at once: more would only pile up on a store that does not answer. */
const MAX_UNANSWERED_RENEWALS = 3;

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
  /** The longest one renewal may take, in ms, before the next is tried. */
  storeTimeoutMs: number;
  now: () => number;
}

export interface LeaseKeeper {
  /** Aborts when the lease is lost: taken over, or run out after the last renewal that got through. */
  readonly signal: AbortSignal;
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
  storeTimeoutMs,
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
  /** The next renewal: a third of a lease on, or a quarter of that after one that failed; never past the lease. */
  const scheduleRenewal = (failed: boolean) => {
    if (stopped || leaseEndsAt >= holdEndsAt) return;
    const cadenceMs = Math.min(leaseMs / 3, leaseEndsAt - now());
    renewal = setTimeout(renew, Math.max(1, failed ? cadenceMs / 4 : cadenceMs));
  };
  /** What a renewal answered, whenever it answers. */
  const renewed = (held: boolean, until: number) => {
    if (stopped) return;
    if (!held) return lose("another request took the key over");
    if (until <= leaseEndsAt) return;
    leaseEndsAt = until;
    armExpiry();
  };
  let unanswered = 0;
  const renew = async () => {
    // Hung statements may each hold a connection: past a few, wait for one to answer instead of sending more.
    if (unanswered >= MAX_UNANSWERED_RENEWALS) return scheduleRenewal(true);
    const until = Math.min(now() + leaseMs, holdEndsAt);
    const boundMs = Math.max(1, Math.min(storeTimeoutMs, (leaseEndsAt - now()) / 2));
    unanswered++;
    // Through a promise, so that a store that throws instead of rejecting is a failed renewal too.
    const attempt = Promise.resolve().then(() => store.renew(id, fence, until));
    void attempt
      .then((held) => renewed(held, until))
      .catch(() => {})
      .finally(() => unanswered--);
    const failed = await within(attempt, boundMs, () => new Error("renewal timed out")).then(
      () => false,
      () => true,
    );
    // A store that is unreachable or hung: try again soon; the expiry timer aborts if the lease runs out first.
    scheduleRenewal(failed);
  };

  armExpiry();
  scheduleRenewal(false);
  return {
    signal: controller.signal,
    stop,
  };
}
