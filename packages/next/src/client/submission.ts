/**
 * How the Server Action hook sends a submission and reads what came back, apart from React: sent again with its key
 * while its answer is lost or "not now", looked up after a reload, and the refusal states the hook shows itself.
 */
import type { RetryPolicy } from "@idemkit/core/client";
import { DEFAULT_RETRY_POLICY, retrying, settledOutcome } from "@idemkit/core/client";
import { unstable_isUnrecognizedActionError, unstable_rethrow } from "next/navigation.js";
import { type ActionRefusal, isActionRefusal, isLookupPending } from "../form-contract.js";

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
): Promise<T | ActionRefusal> {
  /** What came back last: a refusal to show as it is, or nothing (the answer was lost). */
  let last: { value: T } | { lost: unknown } | undefined;
  const shown = (failure: { value: T } | { lost: unknown }) => ("value" in failure ? failure.value : unreachable());
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
export function anotherInputInFlight(): ActionRefusal {
  return {
    idempotencyError: {
      code: "IN_PROGRESS",
      message: "Your last submission is still on its way. Wait for its answer before sending other values.",
      retryable: true,
      retryAfterMs: undefined,
    },
  };
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

/** The state of a submission whose answer never arrived, however often it was sent. */
function unreachable(): ActionRefusal {
  return {
    idempotencyError: {
      code: "UNREACHABLE",
      message:
        "The server could not be reached, so this may not have gone through. Send it again: it will not be done twice.",
      retryable: true,
      retryAfterMs: undefined,
    },
  };
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
