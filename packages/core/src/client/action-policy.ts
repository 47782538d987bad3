/**
 * What a press does, decided from what is in flight and what the form keeps, and nothing else: the key policy of
 * the hook, pure. One user action is one key: a press with the same input joins the action in flight or continues
 * the one kept (a second click, a press after a reload); another input while one is in flight is refused; a new
 * input, a refused action or (with `afterSuccess: "new-action"`) a succeeded one starts a new action with a new key.
 */
import type { Action } from "./action-store.js";

/** What a press finds: the fingerprint of its input, and the actions around it. */
export interface PressContext {
  /** The press's input, fingerprinted; undefined when it cannot be compared (each press is then its own action). */
  inputFingerprint: string | undefined;
  /** The fingerprint of the action this form is sending now, if one is in flight. */
  inFlight: { fingerprint: string | undefined } | undefined;
  /** This form's action still waiting to be sent from TanStack Query's cache (restored after a reload), if any. */
  waiting: Action | undefined;
  /** Reads the action the form keeps (in storage), if any: only a press that sends needs it. */
  kept: () => Action | undefined;
}

/** What the press does: join the action in flight, be refused (another input), or start (or continue) `action`. */
export type PressOutcome = { does: "join" } | { does: "refuse" } | { does: "send"; action: Action };

/** Decides a press; `newKey` mints the key of a new action. */
export function press({ inputFingerprint, inFlight, waiting, kept }: PressContext, newKey: () => string): PressOutcome {
  const same = (fingerprint: string | undefined) => inputFingerprint !== undefined && fingerprint === inputFingerprint;
  if (inFlight) return same(inFlight.fingerprint) ? { does: "join" } : { does: "refuse" };
  // A restored mutation still waiting to send this form's action is in flight too: the same input goes with its
  // key (the server runs it once), another is refused.
  if (waiting && !same(waiting.fingerprint)) return { does: "refuse" };
  const continued = continuedAction(kept(), inputFingerprint);
  return { does: "send", action: continued ?? { key: newKey(), fingerprint: inputFingerprint ?? "" } };
}

/** The kept action a press with `inputFingerprint` continues: the same input, neither refused nor succeeded. */
export function continuedAction(kept: Action | undefined, inputFingerprint: string | undefined): Action | undefined {
  return inputFingerprint !== undefined && kept?.fingerprint === inputFingerprint && !kept.refused && !kept.succeeded
    ? kept
    : undefined;
}
