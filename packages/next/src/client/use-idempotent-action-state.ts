/**
 * `useIdempotentActionState`: React's `useActionState` for an `idempotentAction`, with one key per user action.
 * The key is chosen when the user presses, not when React's queue reaches the submission, so a double click joins
 * the submission on its way instead of queuing a second one; it is kept (in sessionStorage) until the action has an
 * answer, so a retry after a lost answer and a press after a reload send the same key, and the server runs the
 * action once. After a reload the hook asks the action what became of a key it has no answer for, and shows the
 * stored state (or follows the same redirect).
 *
 * Until the page is hydrated the hook is `useActionState` over the action itself: the server renders the form as a
 * plain form post, and without JavaScript the rendered key field (`IdempotencyKeyField`) carries the key.
 */
import type { RetryPolicy } from "@idemkit/core/client";
import {
  type Action,
  actionFingerprint,
  checkedNumber,
  DEFAULT_LOOKUP_MAX_RUNNING_MS,
  formActionStore,
  type KeyStorage,
  knownTab,
  newIdempotencyKey,
  press,
  retryPolicyOf,
  thisTab,
} from "@idemkit/core/client";
import {
  startTransition,
  useActionState,
  useCallback,
  useEffect,
  useMemo,
  useRef,
  useState,
  useSyncExternalStore,
} from "react";
import {
  type ActionRefusal,
  comparedFields,
  IDEMPOTENCY_KEY_FIELD,
  isActionRefusal,
  keepsSubmission,
  LOOKUP_CHECK,
  LOOKUP_FIELD,
} from "../form-contract.js";
import type { FormMessages } from "../form-messages.js";
import { anotherInputInFlight, isNavigation, sentWithRetries, storedAnswer } from "./submission.js";

/** Where and how the hook keeps a form's action, and how it sends it again. */
export interface UseIdempotentActionStateOptions {
  /**
   * The name the form keeps its action under, in `storage`. Default: one per page (`idemkit:action:<path>`); give
   * each form of a page its own (a second form on the same name keeps its action in memory, and the page is warned).
   */
  storageKey?: string;
  /** Where the action is kept: sessionStorage by default (it survives a reload, not the tab); `"memory"` for none. */
  storage?: KeyStorage | "memory";
  /** `useActionState`'s permalink: the page a submission without JavaScript lands on before hydration. */
  permalink?: string;
  /**
   * How a submission whose answer did not arrive (a network failure), or was "not now" (the action still running
   * elsewhere, the database away), is sent again with its key: the link's policy by default; false never resends.
   */
  retry?: Partial<RetryPolicy> | false;
  /** How long a lookup after a reload keeps asking while the action still runs. Default: as the tRPC hook. */
  lookupMaxRunningMs?: number;
  /**
   * The words of the refusals only the hook knows of (`UNREACHABLE`, `OTHER_INPUT_IN_FLIGHT`), in the app's own
   * words or its user's language, as `idempotentAction`'s `messages` gives the server's. Default: idemkit's English.
   */
  messages?: FormMessages | undefined;
}

/** The action, as `idempotentAction` typed it for `useActionState`. */
export type IdempotentFormAction<State> = (
  previous: State | ActionRefusal,
  form: FormData,
) => Promise<State | ActionRefusal>;

/** One name per page: a form elsewhere in the app never takes this one's action for its own. */
function defaultStorageKey(): string {
  return `idemkit:action:${typeof location === "undefined" ? "" : location.pathname}`;
}

const subscribeToNothing = () => () => {};

/**
 * `useActionState(action, initialState)` for an action protected with `idempotentAction`: the same
 * `[state, formAction, isPending]`, with one key per user action. A press with the same fields while the last is on
 * its way joins it; with other fields it is refused (an `IN_PROGRESS` refusal state, until the first answers); after
 * an answer, a new press is a new action with a new key. A submission whose answer is lost is sent again with its
 * key, and if it still has none, the state is an `UNREACHABLE` refusal: pressing again is safe. After a reload, an
 * action that had no answer is looked up, and its stored state shown, or its redirect followed.
 *
 *   const [state, formAction, pending] = useIdempotentActionState(placeOrder, {});
 *   return <form action={formAction}>{keyField}…</form>;
 */
export function useIdempotentActionState<State>(
  action: IdempotentFormAction<State>,
  initialState: State,
  options: UseIdempotentActionStateOptions = {},
): [state: State | ActionRefusal, formAction: (form: FormData) => void, isPending: boolean] {
  const {
    storageKey = defaultStorageKey(),
    storage,
    permalink,
    retry,
    lookupMaxRunningMs = DEFAULT_LOOKUP_MAX_RUNNING_MS,
    messages,
  } = options;
  checkedNumber("useIdempotentActionState()", "lookupMaxRunningMs", lookupMaxRunningMs, { unlimited: true });
  const hydrated = useSyncExternalStore(
    subscribeToNothing,
    () => true,
    () => false,
  );
  const memory = useRef<Action | undefined>(undefined);
  const inFlight = useRef<Action | undefined>(undefined);
  const unmounted = useRef<AbortSignal>(AbortSignal.abort());
  const policy: RetryPolicy | undefined =
    retry === false ? undefined : retryPolicyOf(retry, "useIdempotentActionState()");

  const kept = useMemo(() => formActionStore(storage, storageKey, memory, knownTab), [storage, storageKey]);
  useEffect(() => kept.hold(`useIdempotentActionState(${storageKey})`), [kept, storageKey]);

  useEffect(() => {
    const mounted = new AbortController();
    unmounted.current = mounted.signal;
    return () => mounted.abort();
  }, []);

  /**
   * Records what the answer to `sent` says of its action: done (a new press is a new action), or still open. An
   * answer that arrives after the form is gone is left for the form's next mount to look up and show.
   */
  const settle = useCallback(
    (sent: Action, answer: { value: unknown } | { navigated: true }) => {
      if (unmounted.current.aborted || kept.read()?.key !== sent.key) return;
      if ("navigated" in answer || !isActionRefusal(answer.value)) kept.write({ ...sent, succeeded: true });
      else if (!keepsSubmission(answer.value.idempotencyError)) kept.write({ ...sent, refused: true });
    },
    [kept],
  );

  /** What React's queue runs for a press (or a lookup), once the submissions before it have their answers. */
  const submitted = async (previous: State | ActionRefusal, form: FormData): Promise<State | ActionRefusal> => {
    const key = form.get(IDEMPOTENCY_KEY_FIELD);
    const sent = kept.read();
    const ours = sent && sent.key === key ? sent : undefined;
    if (form.has(LOOKUP_FIELD)) return lookedUp(previous, form, ours);
    try {
      const value = await sentWithRetries(() => action(previous, form), policy, unmounted.current, messages);
      if (ours) settle(ours, { value });
      return value;
    } catch (error) {
      if (ours && isNavigation(error)) settle(ours, { navigated: true });
      throw error;
    } finally {
      if (inFlight.current?.key === key) inFlight.current = undefined;
    }
  };

  /**
   * The lookup: what the action stored for the key. When there is none to give, a check the user pressed (the
   * form's lookup field, rendered after an action that ran unrecorded) shows what the lookup said; one sent after a
   * reload leaves the previous state. While it asks, the action counts as in flight: a press with its
   * fields joins it, one with others is refused.
   */
  const lookedUp = async (
    previous: State | ActionRefusal,
    form: FormData,
    ours: Action | undefined,
  ): Promise<State | ActionRefusal> => {
    const key = String(form.get(IDEMPOTENCY_KEY_FIELD));
    try {
      const found = await storedAnswer(() => action(previous, form), key, {
        signal: unmounted.current,
        maxRunningMs: lookupMaxRunningMs,
        navigated: () => {
          if (ours) settle(ours, { navigated: true });
        },
      });
      if (found && "value" in found) {
        if (ours) settle(ours, found);
        return found.value;
      }
      if (!found || form.get(LOOKUP_FIELD) !== LOOKUP_CHECK) return previous;
      if (ours) settle(ours, { value: found.shown });
      return found.shown;
    } finally {
      if (inFlight.current?.key === key) inFlight.current = undefined;
    }
  };

  const [state, dispatch, isPending] = useActionState<State | ActionRefusal, FormData>(
    hydrated ? submitted : action,
    initialState as Awaited<State>,
    permalink,
  );

  // A press refused while another action is on its way, shown until the state moves on.
  const [refusedPress, setRefusedPress] = useState<{ over: unknown; refusal: ActionRefusal }>();

  const pressed = useCallback(
    (form: FormData) => {
      // A check the form asks for after an action that ran unrecorded: a lookup of the key it rendered, never a
      // send, whatever the fields say now.
      const checked = form.get(IDEMPOTENCY_KEY_FIELD);
      if (form.get(LOOKUP_FIELD) === LOOKUP_CHECK && typeof checked === "string") {
        const open = kept.read();
        inFlight.current = open?.key === checked ? open : undefined;
        dispatch(form);
        return;
      }
      const outcome = press(
        {
          inputFingerprint: actionFingerprint(comparedFields(form)),
          inFlight: inFlight.current,
          waiting: undefined,
          kept: () => kept.read(),
        },
        newIdempotencyKey,
      );
      if (outcome.does === "join") return;
      if (outcome.does === "refuse") {
        // Out of the press's transition, which would hold the refusal back until the action on its way answers.
        const over = state;
        void anotherInputInFlight(messages).then((refusal) => setRefusedPress({ over, refusal }));
        return;
      }
      kept.write(outcome.action);
      inFlight.current = outcome.action;
      form.set(IDEMPOTENCY_KEY_FIELD, outcome.action.key);
      dispatch(form);
    },
    [kept, dispatch, state, messages],
  );

  // After a reload (or a remount), an action kept without an answer is looked up, once per key (StrictMode runs
  // effects twice), and once the tab is known: a duplicated tab must not take the original's action for its own.
  const lookedUpKey = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (!hydrated) return undefined;
    let stopped = false;
    const lookUp = () => {
      const open = kept.read();
      if (stopped || !open || open.succeeded || open.refused || inFlight.current) return;
      if (lookedUpKey.current === open.key) return;
      lookedUpKey.current = open.key;
      inFlight.current = open;
      const form = new FormData();
      form.set(IDEMPOTENCY_KEY_FIELD, open.key);
      form.set(LOOKUP_FIELD, "1");
      startTransition(() => dispatch(form));
    };
    if (knownTab()) lookUp();
    else thisTab().then(lookUp);
    return () => {
      stopped = true;
    };
  }, [hydrated, kept, dispatch]);

  const shown = refusedPress && refusedPress.over === state ? refusedPress.refusal : state;
  return [shown, hydrated ? pressed : dispatch, isPending];
}
