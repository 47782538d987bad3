/**
 * How a duplicate waits for the call that holds its key: within its patience (`waitMs` in all, connection queueing
 * included), polling the key between pauses that start short and level off.
 */
import { Deadline } from "../deadline.js";

/**
 * How long one request may wait, in all, for a call that holds its key (a duplicate's `waitMs`). Its timer is set
 * only when the request first waits, or reads the key outside a transaction: most first executions never do.
 */
export class Patience {
  #deadline: Deadline | undefined;
  #ended = false;
  /** When the request started waiting, on the monotonic clock its deadline runs on. */
  readonly #startedOn = performance.now();
  constructor(
    readonly startedAt: number,
    readonly waitMs: number,
  ) {}

  /** How long the request has waited so far for the call holding its key, in ms: in memory, or between polls. */
  waitedMs = 0;

  /** Waits for `work` (a leader here, a pause between polls) within the patience left, counting the time waited. */
  async waitFor<T>(work: (deadline: Deadline) => Promise<T>): Promise<T> {
    const from = performance.now();
    try {
      return await work(this.deadline);
    } finally {
      this.waitedMs += performance.now() - from;
    }
  }

  /** Runs out when the wait is over: every wait of the request races it. */
  get deadline(): Deadline {
    if (!this.#deadline) {
      this.#deadline = new Deadline();
      if (this.#ended) this.#deadline.clear();
      const waitedMs = performance.now() - this.#startedOn;
      this.#deadline.arm(this.waitMs - waitedMs, () => new Error("waited for the call holding the key"));
    }
    return this.#deadline;
  }

  /** The error the wait ran out with, if it did. */
  get missed(): Error | undefined {
    return this.#deadline?.missed;
  }

  /** The request has been answered. */
  end(): void {
    this.#ended = true;
    this.#deadline?.clear();
  }
}

/** Pauses between polls of a key held elsewhere: short at first (most calls end soon), then steady. */
export const FIRST_POLL_MS = 10;
export const MAX_POLL_MS = 100;
