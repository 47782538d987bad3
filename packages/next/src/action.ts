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
  createIdempotencyEngine,
  fingerprintAsync,
  type IdempotencyContext,
  type IdempotencyEngineOptions,
  IdempotencyError,
  IdempotencyErrorCode,
  type IdempotencyMode,
  type IdempotencyStore,
  isIdempotencyError,
  type ModeTransaction,
  parseIdempotencyKey,
} from "@idemkit/core";
import type { AdapterOptions, ModeOptions, Settlement } from "@idemkit/core/adapter";
import { checkedScope, idempotencyContextOf, lookUpOutcome, notPlainJson, onceLog } from "@idemkit/core/internal";
import type { DefaultModeOf } from "@idemkit/core/store";
import { isControlFlow, replayControlFlow, type StoredControlFlow, storedControlFlow } from "./control-flow.js";
import { type ActionRefusal, comparedFields, IDEMPOTENCY_KEY_FIELD, LOOKUP_FIELD } from "./form-contract.js";
import type { FormMessages } from "./form-messages.js";
import { formRefusals } from "./form-refusal.js";

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
  /**
   * What the form tells its user of a refusal, in the app's own words or its users' language: a message per code,
   * or a function answering for a code within the request. Codes left out keep idemkit's English.
   */
  messages?: FormMessages | undefined;
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
    messages,
    ...engineOptions
  } = options;
  const now = engineOptions.now ?? Date.now;
  const engine = createIdempotencyEngine<unknown>(engineOptions as IdempotencyEngineOptions<unknown>);
  // What the developer must fix in this action's form, said once.
  const log = onceLog();
  const refusals = formRefusals({ messages, log, shownAgain: renderedBack(renderBack) });

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
      return refusals.refusalOf(error, form);
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
    if (outcome.state === "refused") return refusals.refusalOf(outcome.refusal, form);
    if (outcome.state === "stored") return replayOf(JSON.parse(outcome.response.body) as StoredAction, transformer);
    return refusals.pending(outcome.state, id.key, form);
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
