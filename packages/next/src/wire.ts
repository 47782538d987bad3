/**
 * What a Server Action form and `idempotentAction` say to each other, shared by the server and the client hook: the
 * form fields, the refusal a form shows, and the lookup's answer. Nothing here may import server code: the client
 * bundle takes this file.
 */
import type { IdempotencyErrorCode } from "@idemkit/core";

/** The name of the form field that carries the action's Idempotency-Key. */
export const IDEMPOTENCY_KEY_FIELD = "idempotency-key";

/**
 * The field that turns a submission into a lookup: the form holds only the key, and the action answers what became
 * of it (its stored value, or the same redirect) without running. The client hook sends it after a reload.
 */
export const LOOKUP_FIELD = "idempotency-lookup";

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
 * Why a submission did not run, or its answer did not arrive: the server's refusals, and `UNREACHABLE`, which only
 * the client hook gives, when the server could not be reached (the action may or may not have run: sending the form
 * again is safe, its key is kept).
 */
export type ActionRefusalCode = IdempotencyErrorCode | "UNREACHABLE";

/**
 * A submission idemkit refused, returned as the action's value so that the form can show it: its key missing or
 * malformed, used before with other fields, still running elsewhere, or the database away (`retryable`: submitting
 * the same form again can succeed, after `retryAfterMs` when given); nothing ran. Or, from the client hook,
 * `UNREACHABLE`: no answer arrived, so it may have run; sending it again with its key is safe.
 */
export interface ActionRefusal {
  idempotencyError: {
    code: ActionRefusalCode;
    message: string;
    retryable: boolean;
    retryAfterMs: number | undefined;
  };
}

/** Whether an action's value is a refusal: `if (isActionRefusal(state)) show(state.idempotencyError.message)`. */
export function isActionRefusal(value: unknown): value is ActionRefusal {
  return typeof value === "object" && value !== null && "idempotencyError" in value;
}

/** A lookup's answer when nothing is stored for the key: it still runs, or nothing is kept (it never completed). */
export interface LookupPending {
  idempotencyOutcome: "running" | "unknown";
}

export function isLookupPending(value: unknown): value is LookupPending {
  return typeof value === "object" && value !== null && "idempotencyOutcome" in value;
}
