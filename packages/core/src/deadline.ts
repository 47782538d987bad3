/**
 * Bounds how long a request waits on its store, whatever the database or its driver does. A driver can leave a
 * query unsettled for ever (postgres.js 3.4.9 does after a server crash, see docs/failure-behaviour.md), and
 * a pool can keep a request queued for a connection as long as others hold theirs: without a bound, such a request
 * never answers and its client never retries.
 *
 * One timer follows a request through its phases (getting a connection, claiming, running, committing); arming
 * the next phase replaces the previous one's limit. When a phase's time runs out, every `race` rejects with that
 * phase's error and `missed` keeps it, so work that resumes later (a connection handed over after the client was
 * answered) sees it and stops instead of running unobserved.
 */
export class Deadline {
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** What the timer was set for, on the monotonic clock (`performance.now()`); it may go off earlier if clamped. */
  #timerDue = Number.POSITIVE_INFINITY;
  /** When the current phase's time runs out, on the monotonic clock; infinite when it has no limit. */
  #due = Number.POSITIVE_INFINITY;
  #error: () => Error = () => ANSWERED;
  #fail: (error: Error) => void = () => {};
  readonly #expired: Promise<never>;
  /** The error of the phase whose time ran out, once one has. */
  missed: Error | undefined;

  constructor() {
    this.#expired = new Promise<never>((_, reject) => {
      this.#fail = reject;
    });
    this.#expired.catch(() => {});
  }

  /**
   * Starts a phase that must end within `ms`; past that, `error()` is what every waiter gets. An infinite `ms`
   * sets no limit. Nothing happens once a phase was missed or the deadline was cleared.
   *
   * A phase that ends later than the timer already set keeps that timer, which looks again when it goes off: a
   * request passes through four phases, and most end long before their limits, so most requests set one timer.
   */
  arm(ms: number, error: () => Error): void {
    if (this.missed) return;
    this.#error = error;
    this.#due = Number.isNaN(ms) || ms === Number.POSITIVE_INFINITY ? ms : performance.now() + Math.max(0, ms);
    if (this.#due < this.#timerDue) this.#schedule();
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timerDue = this.#due;
    this.#timer = setTimeout(() => this.#expire(), Math.min(Math.max(0, this.#due - performance.now()), MAX_TIMER_MS));
  }

  #expire(): void {
    this.#timerDue = Number.POSITIVE_INFINITY;
    if (this.missed || !(this.#due <= performance.now())) {
      if (!this.missed && this.#due < Number.POSITIVE_INFINITY) this.#schedule();
      return;
    }
    this.missed = this.#error();
    this.#fail(this.missed);
  }

  /** `work`'s outcome, or the missed phase's error if the time runs out first. */
  race<T>(work: Promise<T>): Promise<T> {
    if (this.missed) return Promise.reject(this.missed);
    return Promise.race([work, this.#expired]);
  }

  /** Waits `ms`, unless the time runs out first (then rejects as `race` does); leaves no timer behind either way. */
  async sleep(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await this.race(
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, ms);
        }),
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** Throws the missed phase's error, if a phase was missed: the waiter has been answered already. */
  check(): void {
    if (this.missed) throw this.missed;
  }

  /**
   * The request has been answered: no timer stays behind, and work still waiting (a transaction the driver gave up
   * while its procedure ran on) stops at its next wait instead of going on unobserved.
   */
  clear(): void {
    clearTimeout(this.#timer);
    this.#timerDue = Number.POSITIVE_INFINITY;
    if (this.missed) return;
    this.missed = ANSWERED;
    this.#fail(ANSWERED);
  }
}

/** What work bounded by a cleared deadline meets; one instance, as every request ends this way. */
const ANSWERED = new Error("The request this work belonged to has already been answered.");

/** The longest delay setTimeout keeps (about 24.8 days); a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Rejects with `error()` when `work` has not settled within `ms`; for a single store call. */
export function within<T>(work: Promise<T>, ms: number, error: () => Error): Promise<T> {
  const deadline = new Deadline();
  deadline.arm(ms, error);
  return deadline.race(work).finally(() => deadline.clear());
}

/**
 * Resolves after `ms`, or rejects with the signal's reason as soon as it aborts, clearing the timer: a retry
 * wait must never outlive the operation it belongs to.
 */
export function abortableDelay(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
