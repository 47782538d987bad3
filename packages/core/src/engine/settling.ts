/**
 * A lease-mode call answered at `procedureTimeoutMs` while its work goes on. Its answer (the IN_PROGRESS refusal)
 * carries the work's settling, so what counts a call as running (the abuse limits, the calls in flight) keeps
 * counting it until the work is done, not until its client was answered.
 */
const settlings = new WeakMap<object, Promise<void>>();

/** Marks `answer` as given while the call's work still runs, until `settling` is done (it never rejects). */
export function answeredBeforeSettled(answer: object, settling: Promise<unknown>): void {
  settlings.set(
    answer,
    settling.then(
      () => {},
      () => {},
    ),
  );
}

/** For an answer given while its call's work still runs: when that work is done. Otherwise undefined. */
export function settlingOf(answer: unknown): Promise<void> | undefined {
  return typeof answer === "object" && answer !== null ? settlings.get(answer) : undefined;
}
