/**
 * `idempotentAction()`: a Next.js Server Action that runs once per user action. The key comes in the form, from the
 * hidden field the form rendered with (`IdempotencyKeyField`), so a form works without JavaScript: the same rendered
 * form submitted twice has one effect. Built on `@idemkit/core`'s public engine, as the Fetch adapter is:
 *
 *   FormData ─▶ key field, scope, fields ─▶ engine.run ─┬─ first: the action ─▶ its value, stored
 *                                                       ├─ duplicate: the stored value (or the same redirect, 404)
 *                                                       └─ refused: an ActionRefusal value the form can show
 *
 * What is compared between two submissions with one key is the form's fields and files, without the key and
 * without the fields React adds (`$ACTION_…`): one rendered form is one action, so neither the previous state that
 * `useActionState` passes nor arguments bound with `.bind()` are part of it.
 *
 * A form on `useIdempotentActionState` (`@idemkit/next/client`) sends a key per user action; without JavaScript, a
 * form sends the key rendered into it, and the page renders again with a new one after each submission, except
 * after a refusal that keeps its submission (`ActionKeyField` renders the refused key, so sending it again is the
 * same action). A form
 * with JavaScript but without the hook keeps its rendered key until the page renders it again: a value that asks
 * the user to correct the form (a validation error) should then not be stored (`stores`), so that the corrected
 * form, sent with the same key, runs.
 *
 * A submission with the `idempotency-lookup` field is the hook's lookup: it is answered from the store (the stored
 * value, the same redirect, or that nothing is stored) and never runs the action. A form must not use that name.
 */
import {
  type AdapterOptions,
  createIdempotencyEngine,
  type DefaultModeOf,
  fingerprintAsync,
  type IdempotencyContext,
  type IdempotencyEngineOptions,
  IdempotencyError,
  IdempotencyErrorCode,
  type IdempotencyMode,
  type IdempotencyStore,
  isIdempotencyError,
  type ModeOptions,
  type ModeTransaction,
  parseIdempotencyKey,
  Resend,
  type Settlement,
} from "@idemkit/core";
import {
  checkedScope,
  idempotencyContextOf,
  lookUpOutcome,
  notPlainJson,
  type OnceLog,
  onceLog,
} from "@idemkit/core/internal";
import { isControlFlow, replayControlFlow, type StoredControlFlow, storedControlFlow } from "./control-flow.js";
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
 * What the action gets for one submission, before its own arguments: in atomic mode its `tx` commits with the
 * stored value, and a `notFound()` rolls its writes back.
 */
export type ActionIdempotency<Tx> = IdempotencyContext<Tx>;

/** How an action's value is stored and read back: JSON by default; superjson's pair keeps dates, maps and sets. */
export interface ActionTransformer {
  /** The value as something JSON keeps: superjson's `serialize`. */
  serialize(value: unknown): unknown;
  /** The value back from what `serialize` made: superjson's `deserialize`. */
  deserialize(value: unknown): unknown;
}

/** Options of {@link idempotentAction}: the engine's, those of the other mode refused at compile time. */
export type IdempotentActionOptions<
  TStore extends IdempotencyStore<unknown>,
  TMode extends IdempotencyMode,
> = ActionCommonOptions<TStore, TMode> & ModeOptions<TMode>;

/** What `idempotentAction` takes in either mode. */
export interface ActionCommonOptions<TStore extends IdempotencyStore<unknown>, TMode extends IdempotencyMode>
  extends AdapterOptions<TStore, TMode> {
  /**
   * Who owns the record: the signed-in user or tenant (read from `cookies()` or your auth). Required, so one user can
   * never replay or block another's submission.
   */
  scope: () => string | Promise<string>;
  /** How the value is stored. Default: JSON, which a value that is not plain JSON is refused by. */
  transformer?: ActionTransformer;
  /**
   * Whether a value is the action's answer to its key, stored and sent again to every resubmission (the default,
   * for every value), or one that asks for a correction (a validation error: return false for it), which keeps
   * nothing: a resubmission with the key runs again, and a lookup finds nothing.
   */
  stores?: (value: unknown) => boolean;
  /**
   * The text fields, by name, that a refusal asking for the same submission again carries back for the form to
   * render (`submittedValue`), so that without JavaScript the press it asks for sends what was sent. Only these:
   * whatever a refusal carries is in the page's HTML and its RSC payload. A secret (a password, a card's number or
   * code, a one-time code) is never among them: its field is left for the user to type again. Default: none.
   */
  renderBack?: readonly string[];
}

/**
 * Field names a refusal never carries back, whatever `renderBack` says: the HTML autocomplete tokens of secrets
 * (`current-password`, `cc-number`, `cc-csc`, `one-time-code`) and the names such fields are commonly given.
 */
const SECRET_FIELD = /password|passcode|^cc[-_]|card.?number|cvc|cvv|csc|one.?time|^otp$|secret|token/i;

/** `renderBack` checked once, as the action is made: naming a secret there is a mistake worth failing the build on. */
function renderedBack(names: readonly string[]): ReadonlySet<string> {
  for (const name of names) {
    if (typeof name !== "string" || SECRET_FIELD.test(name)) {
      throw new TypeError(
        `idempotentAction(): renderBack names ${JSON.stringify(name)}, which looks like a secret; a refusal is ` +
          "rendered into the page, so such a field is typed again instead.",
      );
    }
  }
  return new Set(names);
}

/** A stored submission: the value the action returned, or how Next.js ended it. */
type StoredAction = { returned: true; value?: unknown } | { ended: StoredControlFlow };

/** What a first run ends with, beside what is stored. */
type Ending<TResult> = { value: TResult } | { thrown: unknown };

/**
 * The value as JSON, refused loudly when JSON would not give the same value back (a Date, a Map, a class, a cycle).
 * An object's undefined properties are left out, as JSON leaves them out.
 */
const JSON_TRANSFORMER: ActionTransformer = {
  serialize(value) {
    const found = value === undefined ? undefined : notPlainJson(value);
    if (found) {
      throw new TypeError(
        `idempotentAction(): the action's value is not plain JSON (${found.path} is ${found.what}), so its replay ` +
          "would differ; return plain data, or pass a transformer (superjson's serialize and deserialize).",
      );
    }
    return value;
  },
  deserialize: (value) => value,
};

/**
 * Protects a Server Action: each submission needs the form's key field (render `IdempotencyKeyField` in the form),
 * the first runs, its duplicates get its value again (or the same `redirect()`, the same `notFound()`), one that
 * arrives while it runs waits for it (atomic mode) or is refused as in progress, and the key with other fields is
 * refused. Refusals are returned as {@link ActionRefusal} values; a thrown error releases the key and is thrown on.
 * Under `useActionState` a refusal comes back as the next previous state: the wrapped action's type says so.
 *
 *   "use server";
 *   export const placeOrder = idempotentAction("checkout.placeOrder",
 *     async ({ tx }, previous: OrderState, form: FormData) => ({ orderId: await insertOrder(tx, form) }),
 *     { store: drizzleStore({ db }), scope: async () => (await currentUser()).id });
 *
 * `name` is the action's name in its records: keep it stable across deploys. A first submission's cookies and
 * revalidated paths are not sent again to its resubmissions.
 */
export function idempotentAction<
  // The defaults are for a call that does not compile: TypeScript infers the action's arguments last (its first
  // parameter takes its type from the store), and reports any wrong option against the action, as "'unknown' is not
  // assignable to" its state, unless the arguments it has not inferred yet accept anything. With them, a wrong option
  // is reported on that option.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  TArgs extends unknown[] = any[],
  TResult = unknown,
  TStore extends IdempotencyStore<unknown> = IdempotencyStore<unknown>,
  TMode extends IdempotencyMode = DefaultModeOf<TStore>,
>(
  name: string,
  action: (idempotency: ActionIdempotency<ModeTransaction<TStore, TMode>>, ...args: TArgs) => Promise<TResult>,
  options: IdempotentActionOptions<TStore, TMode>,
): IdempotentAction<TArgs, TResult> {
  if (typeof name !== "string" || name.length === 0) {
    throw new TypeError("idempotentAction(): name the action (a non-empty string, stable across deploys).");
  }
  const {
    scope: scopeOf,
    transformer = JSON_TRANSFORMER,
    stores = () => true,
    renderBack = [],
    ...engineOptions
  } = options;
  const shownAgain = renderedBack(renderBack);
  const now = engineOptions.now ?? Date.now;
  const engine = createIdempotencyEngine<unknown>(engineOptions as IdempotencyEngineOptions<unknown>);
  // What the developer must fix in this action's form, said once.
  const log = onceLog();

  const protectedAction = async (...args: TArgs): Promise<TResult | ActionRefusal> => {
    let ending: Ending<TResult> | undefined;
    // The submitted form: the last argument that is one (bound arguments come first, the previous state next).
    const form = args.findLast((arg): arg is FormData => arg instanceof FormData);
    try {
      const key = parseIdempotencyKey(keyFieldOf(form, name), name);
      const scope = checkedScope(await scopeOf(), "idempotentAction()");
      // Typed as the action's value: only the hook and a check (ActionKeyField's field) send the lookup field, and
      // what it answers is a value the action stored, or a refusal the form shows.
      if (form?.has(LOOKUP_FIELD)) return (await lookUp({ scope, path: name, key }, form)) as TResult;
      const request = { scope, path: name, key, fingerprint: await fieldsFingerprint(form as FormData) };
      const run = await engine.run(request, async (execution): Promise<Settlement<undefined>> => {
        const idempotency = idempotencyContextOf<ModeTransaction<TStore, TMode>>(request, execution);
        let value: TResult;
        try {
          value = await action(idempotency, ...args);
        } catch (error) {
          const kept = isControlFlow(error) ? storedControlFlow(error) : undefined;
          // The action's own failure, or control flow a replay does not repeat: nothing is kept, a retry runs again.
          if (!kept) throw error;
          ending = { thrown: error };
          return stored("redirect" in kept ? 303 : 404, { ended: kept });
        }
        ending = { value };
        // The action ran: a value that cannot be stored must not release its key for the action to run again.
        return execution.answer(() =>
          stores(value) ? stored(200, { returned: true, value: transformer.serialize(value) }) : released(),
        );
      });
      if (run.replayed) return replayOf(JSON.parse(run.response.body) as StoredAction, transformer) as TResult;
    } catch (error) {
      if (!isIdempotencyError(error)) throw error;
      return refusalOf(error, form, log, shownAgain);
    }
    if (ending && "thrown" in ending) throw ending.thrown;
    return (ending as { value: TResult }).value;
  };
  /**
   * What became of a key, answered as a resubmission would be: its value, its redirect; or that none is stored, as
   * a refusal a form renders: still running (the form checks again), or nothing kept (the next press is new).
   */
  async function lookUp(id: { scope: string; path: string; key: string }, form: FormData): Promise<unknown> {
    const { store, limits, storeTimeoutMs, busyRetryAfterMs } = options;
    const outcome = await lookUpOutcome(store, id, { now, limits, storeTimeoutMs, busyRetryAfterMs });
    if (outcome.state === "refused") return refusalOf(outcome.refusal, form, log, shownAgain);
    if (outcome.state === "stored") return replayOf(JSON.parse(outcome.response.body) as StoredAction, transformer);
    const running = outcome.state === "running";
    return {
      idempotencyOutcome: outcome.state,
      idempotencyError: {
        code: running ? IdempotencyErrorCode.IN_PROGRESS : "NOTHING_RECORDED",
        message: CHECK_MESSAGES[outcome.state],
        retryable: running,
        retryAfterMs: undefined,
      },
      ...(running && { submitted: { key: id.key, fields: textFieldsOf(form, shownAgain), check: true } }),
    } satisfies LookupPending;
  }
  return protectedAction as IdempotentAction<TArgs, TResult>;
}

/**
 * The protected action's type: its own arguments, its value or a refusal; under `useActionState` (a previous state,
 * then the form) the previous state may be a refusal too, as `useActionState` hands the last value back.
 */
export type IdempotentAction<TArgs extends unknown[], TResult> = TArgs extends [infer TPrevious, FormData]
  ? (previous: TPrevious | ActionRefusal, form: FormData) => Promise<TResult | ActionRefusal>
  : (...args: TArgs) => Promise<TResult | ActionRefusal>;

function stored(status: number, answer: StoredAction): Settlement<undefined> {
  return { value: undefined, response: { status, body: JSON.stringify(answer) } };
}

/** A value that keeps nothing: the key is released, and a resubmission runs again. */
function released(): Settlement<undefined> {
  return { value: undefined, response: undefined };
}

/** The key field's value, or the refusal of a submission without one. */
function keyFieldOf(form: FormData | undefined, name: string): string {
  const field = form?.get(IDEMPOTENCY_KEY_FIELD);
  if (typeof field === "string") return field;
  throw new IdempotencyError(
    IdempotencyErrorCode.KEY_MISSING,
    `${name} is an idempotent action: its form needs the "${IDEMPOTENCY_KEY_FIELD}" field (render ` +
      "<IdempotencyKeyField /> inside the <form>), and it must be called with that form's FormData. Under " +
      "cacheComponents (create-next-app's default), give the page `export const instant = false` and no <Suspense> " +
      "around the field: a field streamed in after the page arrives outside the <form> without JavaScript.",
  );
}

function fieldsFingerprint(form: FormData): Promise<string> {
  return fingerprintAsync({ fields: comparedFields(form) });
}

function replayOf(answer: StoredAction, transformer: ActionTransformer): unknown {
  if ("ended" in answer) return replayControlFlow(answer.ended);
  return answer.value === undefined ? undefined : transformer.deserialize(answer.value);
}

/**
 * What a form's user is told, by code: the engine's messages speak of requests, headers and stores, and some are
 * the developer's to read (a missing key field), never a shopper's. Every code has one, so a new one cannot reach a
 * form unworded; so do a check's own answers (`CHECK_MESSAGES`).
 */
const FORM_MESSAGES: Record<IdempotencyErrorCode, string> = {
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
};

/**
 * What a check (a lookup the form sent after RAN_UNRECORDED) says when nothing is stored for its key yet, or when it
 * could not be answered just now.
 */
const CHECK_MESSAGES = {
  running: "This is still being confirmed. Press the button again in a moment to check how it ended.",
  again: "We could not check how this ended just now. Press the button again in a moment to check again.",
  unknown:
    "Nothing was recorded for this, so it may or may not have gone through. Check before sending it again: " +
    "pressing the button now starts a new one.",
} as const;

/** Refusals whose reason is the developer's to fix, and not said elsewhere: logged once for them. */
const DEVELOPER_CODES: ReadonlySet<IdempotencyErrorCode> = new Set([
  IdempotencyErrorCode.KEY_MISSING,
  IdempotencyErrorCode.KEY_INVALID,
]);

/**
 * The refusal a form shows. One that asks for the same submission again keeps it, its key and the text fields the
 * action renders back, so the press it asks for is the same action (without JavaScript the page renders anew, and
 * a new key field would make it a second one).
 */
function refusalOf(
  error: IdempotencyError,
  form: FormData | undefined,
  log: OnceLog,
  shownAgain: ReadonlySet<string>,
): ActionRefusal {
  if (DEVELOPER_CODES.has(error.code)) log(error.message);
  // A check (the press after an action that ran unrecorded) that could not be answered just now asks to check
  // again: it must never read as "nothing was done", nor make the next press a send.
  const checkAgain = form?.get(LOOKUP_FIELD) === LOOKUP_CHECK && error.resend === Resend.RETRY;
  const refusal: ActionRefusal = {
    idempotencyError: {
      code: error.code,
      message: checkAgain ? CHECK_MESSAGES.again : FORM_MESSAGES[error.code],
      retryable: error.retryable,
      retryAfterMs: error.retryAfterMs,
    },
  };
  const key = form?.get(IDEMPOTENCY_KEY_FIELD);
  if (keepsSubmission(error) && typeof key === "string") {
    refusal.submitted = { key, fields: textFieldsOf(form as FormData, shownAgain) };
    // It ran: the press the refusal asks for must only ask what became of it, never send it again.
    if (checkAgain || error.resend === Resend.CHECK) refusal.submitted.check = true;
  }
  return refusal;
}

/** The compared fields that are text and rendered back, as a form renders them. */
function textFieldsOf(form: FormData, shownAgain: ReadonlySet<string>): Array<[string, string]> {
  return comparedFields(form).filter(
    (entry): entry is [string, string] => typeof entry[1] === "string" && shownAgain.has(entry[0]),
  );
}
