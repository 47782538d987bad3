/**
 * The refusal a form shows, and the words it shows it with. The engine's messages speak of requests, headers and
 * stores, and some are the developer's to read (a missing key field), never a shopper's: a form's user is told what
 * became of their submission and what to do, by code, in copy the app may replace (its own words, its users'
 * language). Every code has a default, so a new one cannot reach a form unworded; so do a check's own answers.
 */
import { type IdempotencyError, IdempotencyErrorCode, Resend } from "@idemkit/core";
import type { OnceLog } from "@idemkit/core/internal";
import {
  type ActionRefusal,
  comparedFields,
  IDEMPOTENCY_KEY_FIELD,
  keepsSubmission,
  LOOKUP_CHECK,
  LOOKUP_FIELD,
  type LookupPending,
} from "./form-contract.js";

/**
 * What a form can tell its user: each of idemkit's refusals, by code, and a check's own answers (a check is the
 * press after an action that ran unrecorded): still being confirmed (`CHECK_RUNNING`), not answerable just now
 * (`CHECK_AGAIN`), nothing recorded (`NOTHING_RECORDED`).
 */
export type FormMessageCode = IdempotencyErrorCode | "CHECK_RUNNING" | "CHECK_AGAIN" | "NOTHING_RECORDED";

/**
 * The app's own copy for what a form tells its user (`idempotentAction`'s `messages`): a message per code, or a
 * function that answers for a code, called within the request (so it may read the user's language from `headers()`
 * or a cookie). A code it leaves out (undefined) keeps idemkit's English; a function that throws is logged once and
 * the default shown, as copy never changes what became of a submission.
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
};

/** Refusals whose reason is the developer's to fix, and not said elsewhere: logged once for them. */
const DEVELOPER_CODES: ReadonlySet<IdempotencyErrorCode> = new Set([
  IdempotencyErrorCode.KEY_MISSING,
  IdempotencyErrorCode.KEY_INVALID,
]);

/** How one action's refusals are shown: its copy, its log for the developer, and the fields it renders back. */
export interface FormRefusalOptions {
  messages: FormMessages | undefined;
  log: OnceLog;
  /** The text fields a refusal that keeps its submission carries back (`renderBack`). */
  shownAgain: ReadonlySet<string>;
}

/** The refusals of one action, as its form shows them. */
export function formRefusals({ messages, log, shownAgain }: FormRefusalOptions) {
  async function say(code: FormMessageCode): Promise<string> {
    try {
      const own = typeof messages === "function" ? await messages(code) : messages?.[code];
      if (typeof own === "string") return own;
    } catch (error) {
      log(`idempotentAction(): messages threw for ${code}; the default message was shown.`, error);
    }
    return DEFAULT_MESSAGES[code];
  }

  /**
   * The refusal a form shows. One whose next press keeps its key (core's resend rule) keeps its submission, its key
   * and the text fields the action renders back, so the press it asks for is the same action (without JavaScript the
   * page renders anew, and a new key field would make it a second one).
   */
  async function refusalOf(error: IdempotencyError, form: FormData | undefined): Promise<ActionRefusal> {
    if (DEVELOPER_CODES.has(error.code)) log(error.message);
    // A check (the press after an action that ran unrecorded) that could not be answered just now asks to check
    // again: it must never read as "nothing was done", nor make the next press a send.
    const checkAgain = form?.get(LOOKUP_FIELD) === LOOKUP_CHECK && error.resend === Resend.RETRY;
    const refusal: ActionRefusal = {
      idempotencyError: {
        code: error.code,
        message: await say(checkAgain ? "CHECK_AGAIN" : error.code),
        retryable: error.retryable,
        retryAfterMs: error.retryAfterMs,
      },
    };
    const key = form?.get(IDEMPOTENCY_KEY_FIELD);
    if (keepsSubmission(error) && typeof key === "string") {
      refusal.submitted = { key, fields: textFieldsOf(form as FormData) };
      // It ran: the press the refusal asks for must only ask what became of it, never send it again.
      if (checkAgain || error.resend === Resend.CHECK) refusal.submitted.check = true;
    }
    return refusal;
  }

  /**
   * A lookup's answer when nothing is stored for the key: still running (the submission is kept, and the next
   * press checks again), or nothing kept (the next press is a new action).
   */
  async function pending(state: "running" | "unknown", key: string, form: FormData): Promise<LookupPending> {
    const running = state === "running";
    return {
      idempotencyOutcome: state,
      idempotencyError: {
        code: running ? IdempotencyErrorCode.IN_PROGRESS : "NOTHING_RECORDED",
        message: await say(running ? "CHECK_RUNNING" : "NOTHING_RECORDED"),
        retryable: running,
        retryAfterMs: undefined,
      },
      ...(running && { submitted: { key, fields: textFieldsOf(form), check: true as const } }),
    };
  }

  /** The compared fields that are text and rendered back, as a form renders them. */
  function textFieldsOf(form: FormData): Array<[string, string]> {
    return comparedFields(form).filter(
      (entry): entry is [string, string] => typeof entry[1] === "string" && shownAgain.has(entry[0]),
    );
  }

  return { refusalOf, pending };
}
