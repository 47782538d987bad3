import { describe, expect, it } from "vitest";
import { continuedAction, press } from "./action-policy.js";
import type { Action } from "./action-store.js";

const tea = "fp-tea";
const kettle = "fp-kettle";
const newKey = () => "new-key";

describe("a press", () => {
  it("with the input in flight joins it; with another input it is refused", () => {
    const inFlight = { fingerprint: tea };
    expect(press({ inputFingerprint: tea, inFlight, waiting: undefined, kept: () => undefined }, newKey)).toEqual({
      does: "join",
    });
    expect(press({ inputFingerprint: kettle, inFlight, waiting: undefined, kept: () => undefined }, newKey)).toEqual({
      does: "refuse",
    });
    // An input that cannot be compared never joins: it could be anything.
    expect(press({ inputFingerprint: undefined, inFlight, waiting: undefined, kept: () => undefined }, newKey)).toEqual(
      {
        does: "refuse",
      },
    );
  });

  it("while a restored mutation waits to send this form's action: the same input goes with its key, another is refused", () => {
    const waiting = { key: "restored", fingerprint: tea };
    expect(press({ inputFingerprint: tea, inFlight: undefined, waiting, kept: () => waiting }, newKey)).toEqual({
      does: "send",
      action: waiting,
    });
    expect(press({ inputFingerprint: kettle, inFlight: undefined, waiting, kept: () => waiting }, newKey)).toEqual({
      does: "refuse",
    });
  });

  it("continues the kept action with the same input; a new input, a refused or a succeeded action is a new key", () => {
    const kept = { key: "kept", fingerprint: tea };
    const context = { inFlight: undefined, waiting: undefined };
    expect(press({ ...context, inputFingerprint: tea, kept: () => kept }, newKey)).toEqual({
      does: "send",
      action: kept,
    });
    const over: Action[] = [
      { ...kept, fingerprint: kettle },
      { ...kept, refused: true },
      { ...kept, succeeded: true },
    ];
    for (const ended of over) {
      expect(press({ ...context, inputFingerprint: tea, kept: () => ended }, newKey)).toEqual({
        does: "send",
        action: { key: "new-key", fingerprint: tea },
      });
    }
    expect(continuedAction(kept, undefined)).toBeUndefined();
  });
});
