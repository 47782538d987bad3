/**
 * Atomic mode, within one process: one call per record runs at a time, and its duplicates wait for it in memory
 * (no connection, no statement), then replay what it stored, or claim if it stored nothing.
 */
import { IdempotencyErrorCode, isIdempotencyError } from "../errors.js";

/** What a leader's end says to those waiting for it: it gave up waiting for a call that holds the key elsewhere. */
export const IN_PROGRESS = Symbol("in progress");

export class SingleFlight {
  /** The calls running in this process, by record; each settles (never rejects) when its call ends. */
  readonly #running = new Map<string, Promise<typeof IN_PROGRESS | undefined>>();

  /** The running call of record `name`, to wait for; undefined when none runs. */
  leaderOf(name: string): Promise<typeof IN_PROGRESS | undefined> | undefined {
    return this.#running.get(name);
  }

  /** Runs `call` as the one call of its record in this process; duplicates wait for it. */
  lead<T>(name: string, call: Promise<T>): Promise<T> {
    const ended = call.then(
      () => undefined,
      (error: unknown) =>
        isIdempotencyError(error) && error.code === IdempotencyErrorCode.IN_PROGRESS ? IN_PROGRESS : undefined,
    );
    this.#running.set(name, ended);
    void ended.then(() => {
      if (this.#running.get(name) === ended) this.#running.delete(name);
    });
    return call;
  }
}
