/** Thrown when a form breaks the double-submit contract, or a staged fault found nothing to act on; its message lists what was sent. */
export class DoubleSubmitError extends Error {
  override readonly name = "DoubleSubmitError";
}
