/**
 * The refusal a form shows. The engine's messages speak of requests, headers and stores, and some are the
 * developer's to read (a missing key field), never a shopper's: a form's user is told what became of their
 * submission and what to do, in the words of `form-messages.ts` (the app's own where it gives them), and the
 * submission is kept for the next press where the resend rule says its key is kept.
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
import { type FormMessageCode, type FormMessages, formMessage } from "./form-messages.js";

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
  const say = (code: FormMessageCode) =>
    formMessage(messages, code, (detail, cause) => log(`idempotentAction(): ${detail}`, cause));

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
