/**
 * The words a form shows its user, by what happened, and the app's own in their place: one table, read by the
 * Server Action on the server (its refusals) and by the client hook in the browser (what only it knows). Nothing
 * here may import server code.
 */
import { IdempotencyErrorCode } from "@idemkit/core/client";

/**
 * What a form can tell its user: each of idemkit's refusals, by code; a check's own answers (a check is the press
 * after an action that ran unrecorded): still being confirmed (`CHECK_RUNNING`), not answerable just now
 * (`CHECK_AGAIN`), nothing recorded (`NOTHING_RECORDED`); and the client hook's own: no answer arrived
 * (`UNREACHABLE`), a press with other fields while one is on its way (`OTHER_INPUT_IN_FLIGHT`).
 */
export type FormMessageCode =
  | IdempotencyErrorCode
  | "CHECK_RUNNING"
  | "CHECK_AGAIN"
  | "NOTHING_RECORDED"
  | "UNREACHABLE"
  | "OTHER_INPUT_IN_FLIGHT";

/**
 * The app's own copy for what a form tells its user (`messages`, of `idempotentAction` on the server and of
 * `useIdempotentActionState` in the browser): a message per code, or a function that answers for a code (on the
 * server, called within the request, so it may read the user's language from `headers()` or a cookie). A code it
 * leaves out (undefined) keeps idemkit's English; a function that throws is logged and the default shown, as copy
 * never changes what became of a submission.
 *
 *   messages: async (code) => (await catalogueFor(await headers()))[code]
 */
export type FormMessages =
  | Partial<Record<FormMessageCode, string>>
  | ((code: FormMessageCode) => string | undefined | Promise<string | undefined>);

const DEFAULT_MESSAGES: Record<FormMessageCode, string> = {
  [IdempotencyErrorCode.KEY_MISSING]:
    "This form could not be sent as it was, and nothing was done. Reload the page and try again.",
  [IdempotencyErrorCode.KEY_INVALID]:
    "This form could not be sent as it was, and nothing was done. Reload the page and try again.",
  [IdempotencyErrorCode.KEY_SHARED_IN_BATCH]:
    "This form could not be sent as it was, and nothing was done. Reload the page and try again.",
  [IdempotencyErrorCode.FINGERPRINT_MISMATCH]:
    "This form was already sent with other values. Reload the page to send it again with these.",
  [IdempotencyErrorCode.IN_PROGRESS]:
    "This form is still being sent. Send it again in a moment: it will not be done twice.",
  [IdempotencyErrorCode.STORE_UNAVAILABLE]:
    "This could not be saved just now, and nothing was done. Send the form again.",
  [IdempotencyErrorCode.OUTCOME_UNKNOWN]:
    "We could not confirm whether this went through. Send the form again to check: it will not be done twice.",
  [IdempotencyErrorCode.STORE_MISCONFIGURED]:
    "This cannot be done just now, and nothing was done. Please try again later.",
  [IdempotencyErrorCode.LEASE_LOST]:
    "This is taking longer than usual. Send the form again in a moment to see how it ended.",
  [IdempotencyErrorCode.RAN_UNRECORDED]:
    "This was received and may have gone through, but it could not be confirmed just now. Press the button again " +
    "in a moment to check how it ended: that only checks, and sends nothing twice.",
  [IdempotencyErrorCode.RAN_WITHOUT_ANSWER]:
    "This went through, but its result cannot be shown. Sending it again will not do it twice: check whether it " +
    "was done before starting a new one.",
  [IdempotencyErrorCode.ROLLED_BACK]:
    "This could not be completed, and nothing was done. You can try again; if it keeps happening, please tell us.",
  [IdempotencyErrorCode.BODY_TOO_LARGE]: "This form is too large to send, and nothing was done.",
  [IdempotencyErrorCode.BODY_INVALID]:
    "This form could not be read, and nothing was done. Reload the page and try again.",
  [IdempotencyErrorCode.BODY_TIMEOUT]: "This form took too long to arrive, and nothing was done. Send it again.",
  [IdempotencyErrorCode.RATE_LIMITED]: "Too many submissions just now, and nothing was done. Try again in a moment.",
  CHECK_RUNNING: "This is still being confirmed. Press the button again in a moment to check how it ended.",
  CHECK_AGAIN: "We could not check how this ended just now. Press the button again in a moment to check again.",
  NOTHING_RECORDED:
    "Nothing was recorded for this, so it may or may not have gone through. Check before sending it again: " +
    "pressing the button now starts a new one.",
  UNREACHABLE:
    "The server could not be reached, so this may not have gone through. Send it again: it will not be done twice.",
  OTHER_INPUT_IN_FLIGHT: "Your last submission is still on its way. Wait for its answer before sending other values.",
};

/** What the form tells its user of `code`: the app's own words when `messages` has them, else idemkit's. */
export async function formMessage(
  messages: FormMessages | undefined,
  code: FormMessageCode,
  log: (message: string, cause: unknown) => void,
): Promise<string> {
  try {
    const own = typeof messages === "function" ? await messages(code) : messages?.[code];
    if (typeof own === "string") return own;
  } catch (error) {
    log(`messages threw for ${code}; the default message was shown.`, error);
  }
  return DEFAULT_MESSAGES[code];
}
