/**
 * How the Server Action hook sends a submission and reads what came back, apart from React: sent again with its key
 * while its answer is lost or "not now", looked up after a reload, and the refusal states the hook shows itself.
 */
import type { RetryPolicy } from "@idemkit/core/client";
import { DEFAULT_RETRY_POLICY, retrying, settledOutcome } from "@idemkit/core/client";
import { unstable_isUnrecognizedActionError, unstable_rethrow } from "next/navigation.js";
import { type ActionRefusal, isActionRefusal, isLookupPending } from "../form-contract.js";
import { type FormMessageCode, type FormMessages, formMessage } from "../form-messages.js";

/**
 * Sends a submission, and again with the same key while its answer is lost (the fetch failed, or its answer broke
 * off) or "not now", as `policy` allows, and never once `signal` aborts (the form is gone: its next mount looks the
 * key up); a refusal or value that is the action's answer is returned as it is. Thrown on, as without idemkit: an
 * error the action threw on the server (it carries a digest), an action this deployment does not know, and
 * Next.js's navigations.
 */
export async function sentWithRetries<T>(
  send: () => Promise<T>,
  policy: RetryPolicy | undefined,
  signal: AbortSignal,
  messages?: FormMessages,
): Promise<T | ActionRefusal> {
  /** What came back last: a refusal to show as it is, or nothing (the answer was lost). */
  let last: { value: T } | { lost: unknown } | undefined;
  const shown = async (failure: { value: T } | { lost: unknown }) =>
    "value" in failure ? failure.value : refusal("UNREACHABLE", await said(messages, "UNREACHABLE"));
  try {
    const ended = await retrying<T, { value: T } | { lost: unknown }>(
      async () => {
        try {
          const value = await send();
          if (!isActionRefusal(value) || !value.idempotencyError.retryable) return { answer: value };
          last = { value };
          return { failure: last, retryable: true, retryAfterMs: value.idempotencyError.retryAfterMs ?? 0 };
        } catch (error) {
          if (isNavigation(error) || hasDigest(error) || unstable_isUnrecognizedActionError(error)) throw error;
          last = { lost: error };
          return { failure: last, retryable: true, retryAfterMs: 0, lost: true };
        }
      },
      // Without a policy, a submission is sent once.
      { policy: policy ?? { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 }, signal },
    );
    return "answer" in ended ? ended.answer : shown(ended.failure);
  } catch (error) {
    // The form went while its submission waited to be sent again: what came back last stands, and nothing more is
    // sent (its next mount looks the key up).
    if (signal.aborted && error === signal.reason && last) return shown(last);
    throw error;
  }
}

function hasDigest(error: unknown): boolean {
  return typeof error === "object" && error !== null && typeof (error as { digest?: unknown }).digest === "string";
}

/** The state of a press with other fields while an action is on its way: shown until that one answers. */
export async function anotherInputInFlight(messages: FormMessages | undefined): Promise<ActionRefusal> {
  return refusal("IN_PROGRESS", await said(messages, "OTHER_INPUT_IN_FLIGHT"));
}

/** A refusal only the hook knows of (no answer, or another input in flight): still to be sent, its key kept. */
function refusal(code: "UNREACHABLE" | "IN_PROGRESS", message: string): ActionRefusal {
  return { idempotencyError: { code, message, retryable: true, retryAfterMs: undefined } };
}

/** The hook's own words for `code`, the app's where `messages` has them. */
function said(messages: FormMessages | undefined, code: FormMessageCode): Promise<string> {
  return formMessage(messages, code, (detail, cause) =>
    console.error(`idemkit: useIdempotentActionState(): ${detail}`, cause),
  );
}
/** Whether `error` is Next.js ending the action with a navigation (a redirect, a 404): the router's, not a failure. */
export function isNavigation(error: unknown): boolean {
  try {
    unstable_rethrow(error);
    return false;
  } catch {
    return true;
  }
}

/**
 * What the action stored for `key`, asked with `lookUp` (a submission carrying the lookup field) and asked again
 * while the action still runs elsewhere, up to `maxRunningMs`: its value; or, when there is none to give, the
 * lookup's last refusal (`shown`: nothing stored yet, nothing kept, a refusal kept for the key, or the lookup itself
 * refused), which a check the user pressed shows, and a lookup after a reload leaves (the key is kept). A stored
 * redirect or 404 is Next.js's router's to follow, and `navigated` is told: the action is done.
 */
export async function storedAnswer<T>(
  lookUp: () => Promise<T | ActionRefusal>,
  key: string,
  { signal, maxRunningMs, navigated }: { signal: AbortSignal; maxRunningMs: number; navigated: () => void },
): Promise<{ value: T } | { shown: ActionRefusal } | undefined> {
  let found: { value: T } | { shown: ActionRefusal } | undefined;
  await settledOutcome(
    async () => {
      try {
        const value = await lookUp();
        if (isActionRefusal(value)) {
          found = { shown: value };
          return { state: isLookupPending(value) ? value.idempotencyOutcome : "unknown" };
        }
        found = { value };
        return { state: "completed", data: value };
      } catch (error) {
        if (isNavigation(error)) navigated();
        throw error;
      }
    },
    { path: "", key },
    { signal, maxRunningMs },
    () => {},
  );
  return found;
}
