/**
 * What a Server Action form and `idempotentAction` say to each other, shared by the server and the client hook: the
 * form fields, the refusal a form shows, and the lookup's answer. Nothing here may import server code: the client
 * bundle takes this file.
 */
import type { IdempotencyErrorCode } from "@idemkit/core";
import { nextStep, nextStepAfterRefusal } from "@idemkit/core/client";
import { createElement, type ReactElement } from "react";

/** The name of the form field that carries the action's Idempotency-Key. */
export const IDEMPOTENCY_KEY_FIELD = "idempotency-key";

/** The hidden input that carries `key` in a form. */
export function keyInput(key: string): ReactElement {
  return createElement("input", { type: "hidden", name: IDEMPOTENCY_KEY_FIELD, value: key });
}

/**
 * The field that turns a submission into a lookup: the action answers what became of its key (its stored value,
 * or the same redirect) without running. The client hook sends it after a reload, and a form renders it
 * (`ActionKeyField`) after a refusal that asks the user to check rather than to send again.
 */
export const LOOKUP_FIELD = "idempotency-lookup";

/** The lookup field's value when the user pressed for it (a check), where the hook's own lookups send "1". */
export const LOOKUP_CHECK = "check";

/** The hidden input that makes a form's next submission a lookup of its key: a check the user presses for. */
export function lookupInput(): ReactElement {
  return createElement("input", { type: "hidden", name: LOOKUP_FIELD, value: LOOKUP_CHECK });
}

/**
 * The fields that make one submission another: the form's fields and files, without the key, the lookup mark and
 * what React adds to a form (`$ACTION_…`). The server fingerprints these, and the client hook tells one user action
 * from the next by them.
 */
export function comparedFields(form: FormData): Array<[string, FormDataEntryValue]> {
  return [...form.entries()].filter(
    ([field]) => field !== IDEMPOTENCY_KEY_FIELD && field !== LOOKUP_FIELD && !field.startsWith("$ACTION_"),
  );
}

/**
 * Why a submission did not run, or its answer did not arrive: the server's refusals; `UNREACHABLE`, which only the
 * client hook gives, when the server could not be reached (the action may or may not have run: sending the form
 * again is safe, its key is kept); and `NOTHING_RECORDED`, a check that found nothing kept for an action that ran
 * unrecorded (it may or may not have gone through; the next press is a new action).
 */
export type ActionRefusalCode = IdempotencyErrorCode | "UNREACHABLE" | "NOTHING_RECORDED";

/**
 * A submission idemkit refused, returned as the action's value so that the form can show it: its key missing or
 * malformed, used before with other fields, still running elsewhere, the database away, or its outcome unknown
 * (`retryable`: submitting the same form again can succeed, after `retryAfterMs` when given). Or, from the client
 * hook, `UNREACHABLE`: no answer arrived, so it may have run; sending it again with its key is safe.
 */
export interface ActionRefusal {
  idempotencyError: {
    code: ActionRefusalCode;
    /** For the form's user: what happened to their submission, and what to do. */
    message: string;
    retryable: boolean;
    retryAfterMs: number | undefined;
  };
  /**
   * A refusal that asks for the same submission again (`retryable`) keeps it: the key it came with and the text
   * fields the action renders back (its `renderBack`). A form renders them back (`ActionKeyField`, `submittedValue`), so that without JavaScript the press the
   * message asks for is the same action, never a second one under a new key.
   */
  submitted?: SubmittedAction;
}

/** A refused submission, as its form renders it again. */
export interface SubmittedAction {
  key: string;
  /**
   * The next press asks what became of the action (a lookup, `ActionKeyField` renders its field) rather than sending
   * it again: it ran, and a resend could run it a second time.
   */
  check?: true;
  /**
   * The fields the action renders back (`renderBack`), in order (a field may repeat): text only, as files cannot be
   * rendered back into a form, and never a secret, which the user types again.
   */
  fields: Array<[name: string, value: string]>;
}

/**
 * Whether a refusal keeps its submission, for the form's next press to be the same action: core's one resend rule
 * (`nextStep`) on the refusal's code, whose next press keeps the key while the action may have run, may still run,
 * or nothing is kept for it. The server carries the submission in such a refusal, and the client hook keeps its key.
 * Of the form's own codes, an answer that never arrived keeps it; a check that found nothing recorded starts anew.
 */
export function keepsSubmission({ code }: { code: ActionRefusalCode }): boolean {
  if (code === "UNREACHABLE") return nextStep({ status: undefined }).keepKey;
  if (code === "NOTHING_RECORDED") return false;
  return nextStepAfterRefusal(code).keepKey;
}

/** Whether an action's value is a refusal: `if (isActionRefusal(state)) show(state.idempotencyError.message)`. */
export function isActionRefusal(value: unknown): value is ActionRefusal {
  return typeof value === "object" && value !== null && "idempotencyError" in value;
}

/**
 * The value the form's field `name` was submitted with, when `state` is a refusal that keeps its submission: for a
 * field's `defaultValue`, so that sending the form again sends what was sent. Undefined otherwise, and for a field
 * the action does not name in `renderBack`. A field the action compares and does not render back (a password) is
 * typed again: with another value, the same key is another action, refused.
 */
export function submittedValue(state: unknown, name: string): string | undefined {
  return submittedValues(state, name)[0];
}

/** Every value the form's field `name` was submitted with (checkboxes, a multiple select), as `submittedValue`. */
export function submittedValues(state: unknown, name: string): string[] {
  if (!isActionRefusal(state)) return [];
  return (state.submitted?.fields ?? []).filter(([field]) => field === name).map(([, value]) => value);
}

/**
 * A lookup's answer when nothing is stored for the key: it still runs (or its answer is still being recorded), or
 * nothing is kept. It is a refusal too, for a form that asked without JavaScript to render: running keeps the
 * submission and checks again; nothing kept says so, and the next press is a new action.
 */
export interface LookupPending extends ActionRefusal {
  idempotencyOutcome: "running" | "unknown";
}

export function isLookupPending(value: unknown): value is LookupPending {
  return typeof value === "object" && value !== null && "idempotencyOutcome" in value;
}
