/**
 * A form's key field after a refusal. Without JavaScript the page renders anew after each submission, and the
 * server renders a new key field with it: when the refusal asks for the same submission again (still running, the
 * database away, its outcome unknown), that new key would make the press it asks for a second action. So the form
 * renders the refused submission's key instead, which the refusal keeps. After an action that ran and whose answer
 * was not recorded, the press the refusal asks for is a check: the field that makes it a lookup goes with the key.
 */
import { createElement, Fragment, type ReactNode } from "react";
import { isActionRefusal, keyInput, lookupInput } from "../form-contract.js";

/**
 * The key field for a form's next submission: the refused submission's key when `state` is a refusal that keeps it,
 * else `children`, the field the server rendered for this page view (`<IdempotencyKeyField />`).
 *
 *   <form action={formAction}>
 *     <ActionKeyField state={state}>{keyField}</ActionKeyField>
 *     <input name="qty" defaultValue={submittedValue(state, "qty") ?? 1} />
 */
export function ActionKeyField({ state, children }: { state: unknown; children?: ReactNode }): ReactNode {
  if (!isActionRefusal(state) || !state.submitted) return children;
  const key = keyInput(state.submitted.key);
  return state.submitted.check ? createElement(Fragment, null, key, lookupInput()) : key;
}
