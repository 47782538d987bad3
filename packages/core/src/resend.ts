/**
 * The one rule of what follows an answer to a protected call, read on both sides of the wire: the server decides by
 * it whether an answer is stored (and replayed to every retry with the key) or released (the next retry runs the
 * call again), and every client what it does next with the action's key.
 *
 * | answer                                  | server                     | client, same key     | next press   |
 * |-----------------------------------------|----------------------------|----------------------|--------------|
 * | 2xx                                     | stored                     | done                 | (new action) |
 * | 408, 429, 499 (try again later)         | released                   | retries              | same key     |
 * | 409 with Retry-After (still running)    | (refusal, nothing ran)     | retries after it     | same key     |
 * | 409, 412 from the procedure             | released: state may change | gives up             | same key     |
 * | any other 4xx                           | stored                     | gives up             | new key      |
 * | 5xx                                     | released (stored with      | retries              | same key     |
 * |                                         | `storeServerErrors`)       |                      |              |
 * | no answer (network failure)             | -                          | retries              | same key     |
 * | any answer marked `Idempotent-Replayed` | -                          | gives up: it never   | new key      |
 * |                                         |                            | changes              |              |
 * | idemkit's refusal, `Idempotent-Resend`  | -                          | as it says: `retry`, | by status,   |
 * |                                         |                            | `check` (a lookup),  | as above     |
 * |                                         |                            | `never`              |              |
 *
 * `Idempotent-Resend` is the server's own word on its refusal (`resendOf`), so it decides over the status: a kept
 * refusal's 500 is never retried, with or without the app's error formatter. A procedure's own 409 is a business
 * conflict: retrying it blindly would re-run it with the same outcome, so only a 409 that says when to come back
 * (idemkit's IN_PROGRESS and LEASE_LOST) is retried. The next press keeps the key wherever the action may have run
 * or nothing is kept for it (a 5xx refusal that says `never` too: RAN_WITHOUT_ANSWER, whose action ran), so that
 * a press can never run an action twice. `nextStep` is this table.
 */

import { type IdempotencyErrorCode, Resend, resendOf } from "./errors.js";
import { httpStatusOf } from "./http-status.js";

/** 4xx answers that say "not now" rather than "never": storing them would replay a passing state for the whole TTL. */
const RELEASED_CLIENT_STATUSES: ReadonlySet<number> = new Set([408, 409, 412, 429, 499]);
/** 4xx answers worth sending again with the same key, as they are. */
const RETRYABLE_CLIENT_STATUSES: ReadonlySet<number> = new Set([408, 429, 499]);

/** Whether the server stores an answer with this status, to replay it to every retry with the key. */
export function isStoredStatus(
  status: number,
  { storeServerErrors = false }: { storeServerErrors?: boolean } = {},
): boolean {
  if (status >= 500) return storeServerErrors;
  return !RELEASED_CLIENT_STATUSES.has(status);
}

/** What a client knows of an answer when it decides what to do next. */
export interface AnswerSeen {
  /** The HTTP status, or undefined when no answer arrived (a network failure). */
  status: number | undefined;
  /** Whether the answer carried `Retry-After`. */
  retryAfter?: boolean;
  /** Whether the answer was a replay (`Idempotent-Replayed: true`). */
  replayed?: boolean;
  /** The answer's `Idempotent-Resend`, when it carried one: idemkit's own refusals do. */
  resend?: string | null | undefined;
}

/** What a client does next with an action, after one answer to it. */
export interface NextStep {
  /**
   * With the same key: send the same request again (`retry`), only ask what became of it (`check`, a lookup), or
   * neither (`never`).
   */
  resend: Resend;
  /**
   * After a failure, whether the user's next press of the action sends this key again, as the same action: true
   * while the action may have run, may still run, or nothing is kept for its key; false once the failure is kept for
   * the key (a stored 4xx, any failure replayed), where the same key could only replay it and a new press is a new
   * action. (A success ends the action: its next press is a new one.)
   */
  keepKey: boolean;
}

/**
 * The one resend rule, read by every client of idemkit's (the tRPC link, both hooks, the Server Action form) and by
 * a client of an app's own: what to do next after `answer`. idemkit's refusals say it themselves
 * (`Idempotent-Resend`), which decides over the status; a replayed answer never changes; a procedure's own 409 is a
 * business conflict, retried blindly only when it says when to come back.
 */
export function nextStep({ status, retryAfter = false, replayed = false, resend }: AnswerSeen): NextStep {
  const keptFailure = status !== undefined && status >= 400 && (replayed || (status < 500 && isStoredStatus(status)));
  return { resend: resendAfter(status, retryAfter, replayed, resend), keepKey: !keptFailure };
}

/** The next step after idemkit's own refusal with `code`, as its status and `Idempotent-Resend` tell a client. */
export function nextStepAfterRefusal(code: IdempotencyErrorCode): NextStep {
  return nextStep({ status: httpStatusOf(code), resend: resendOf(code) });
}

function resendAfter(
  status: number | undefined,
  retryAfter: boolean,
  replayed: boolean,
  resend: string | null | undefined,
): Resend {
  if (replayed) return Resend.NEVER;
  if (resend !== undefined && resend !== null)
    return resend === Resend.RETRY || resend === Resend.CHECK ? resend : Resend.NEVER;
  if (status === undefined || status >= 500) return Resend.RETRY;
  if (status === 409) return retryAfter ? Resend.RETRY : Resend.NEVER;
  return RETRYABLE_CLIENT_STATUSES.has(status) ? Resend.RETRY : Resend.NEVER;
}
