// @vitest-environment jsdom
/**
 * `useIdempotentActionState` in React, over a real `idempotentAction` (on the memory store) reached through a wire
 * the test controls: each submission crosses it as a copy, as a Server Action's form does, and its answer can be
 * held or lost after the server ran. What a user relies on: one run per user action across double presses, lost
 * answers and reloads, and a new key for the next action. The same in Chromium, against PostgreSQL and PGlite, is
 * e2e/tests/server-action.spec.ts.
 */
import { memoryStore } from "@idemkit/core";
import type { KeyStorage, RetryPolicy } from "@idemkit/core/client";
import { gate } from "@idemkit/testkit";
import { act, cleanup, renderHook, waitFor } from "@testing-library/react";
import { StrictMode, startTransition } from "react";
import { afterEach, describe, expect, it } from "vitest";
import { type UseIdempotentActionStateOptions, useIdempotentActionState } from "../src/client.js";
import { LOOKUP_FIELD } from "../src/form-contract.js";
import { IDEMPOTENCY_KEY_FIELD, idempotentAction, isActionRefusal } from "../src/index.js";

afterEach(cleanup);

interface OrderState {
  orderId?: number;
}

/** A checkout action on a server, and the wire to it: what each submission carried, and faults to stage. */
function checkout() {
  const keys: string[] = [];
  let runs = 0;
  let answered = 0;
  let hold: Promise<void> | undefined;
  let holdLookups: Promise<void> | undefined;
  let lookups = 0;
  let lose: "answer" | "request" | undefined;
  let loseAlways = false;
  const placeOrder = idempotentAction(
    "checkout.placeOrder",
    async (_idempotency, _previous: OrderState, _form: FormData): Promise<OrderState> => {
      runs++;
      await hold;
      return { orderId: runs };
    },
    { store: memoryStore(), scope: () => "alice" },
  );
  const wire = async (previous: OrderState | object, form: FormData) => {
    if (form.has(LOOKUP_FIELD)) {
      lookups++;
      await holdLookups;
      return placeOrder(previous as OrderState, form);
    }
    keys.push(String(form.get(IDEMPOTENCY_KEY_FIELD)));
    const fault = lose;
    if (!loseAlways) lose = undefined;
    if (fault === "request") throw new TypeError("Failed to fetch");
    const copy = new FormData();
    for (const [field, value] of form.entries()) copy.append(field, value);
    const answer = await placeOrder(previous as OrderState, copy);
    answered++;
    if (fault === "answer") throw new TypeError("Failed to fetch");
    return JSON.parse(JSON.stringify(answer)) as typeof answer;
  };
  return {
    wire,
    keys,
    runs: () => runs,
    answered: () => answered,
    lookups: () => lookups,
    holdLookups() {
      const held = gate();
      holdLookups = held.opened;
      return () => {
        holdLookups = undefined;
        held.open();
      };
    },
    holdNext() {
      const held = gate();
      hold = held.opened;
      return () => {
        hold = undefined;
        held.open();
      };
    },
    loseNext(what: "answer" | "request", { always = false } = {}) {
      lose = what;
      loseAlways = always;
    },
    heal() {
      lose = undefined;
      loseAlways = false;
    },
  };
}

function sessionStorageLike(): KeyStorage {
  const items = new Map<string, string>();
  return {
    getItem: (name) => items.get(name) ?? null,
    setItem: (name, value) => void items.set(name, value),
    removeItem: (name) => void items.delete(name),
  };
}

const NO_WAIT: Partial<RetryPolicy> = { baseDelayMs: 0, maxDelayMs: 0, maxAttempts: 3 };

function mounted(
  shop: ReturnType<typeof checkout>,
  options: UseIdempotentActionStateOptions = {},
  { strict = false } = {},
) {
  return renderHook(
    () => useIdempotentActionState<OrderState>(shop.wire, {}, { storage: "memory", retry: NO_WAIT, ...options }),
    strict ? { wrapper: StrictMode } : {},
  );
}

/** What a form submits: its fields, and the key field the server rendered, which the hook replaces. */
function form(item: string): FormData {
  const data = new FormData();
  data.set(IDEMPOTENCY_KEY_FIELD, "rendered-key");
  data.set("item", item);
  return data;
}

/** Presses, as a form does: in a transition, which `act` waits for before the test reads the state. */
async function pressed(formAction: (form: FormData) => void, ...items: string[]) {
  await act(async () =>
    startTransition(() => {
      for (const item of items) formAction(form(item));
    }),
  );
}

describe("useIdempotentActionState", () => {
  it("sends a double press once, and shows its state", async () => {
    const shop = checkout();
    const { result } = mounted(shop);
    await pressed(result.current[1], "tea", "tea");
    await waitFor(() => expect(result.current[0]).toEqual({ orderId: 1 }));
    expect(shop.keys).toHaveLength(1);
    expect(shop.keys[0]).not.toBe("rendered-key");
  });

  it("sends a submission whose answer was lost again with its key: the action ran once, and its state shows", async () => {
    const shop = checkout();
    shop.loseNext("answer");
    const { result } = mounted(shop);
    await pressed(result.current[1], "tea");
    await waitFor(() => expect(result.current[0]).toEqual({ orderId: 1 }));
    expect([shop.runs(), shop.keys.length, new Set(shop.keys).size]).toEqual([1, 2, 1]);
  });

  it("ends a submission that never gets an answer UNREACHABLE, and the same press sends the same key", async () => {
    const shop = checkout();
    shop.loseNext("answer", { always: true });
    const { result } = mounted(shop);
    await pressed(result.current[1], "tea");
    await waitFor(() =>
      expect(isActionRefusal(result.current[0]) && result.current[0].idempotencyError.code).toBe("UNREACHABLE"),
    );
    expect(shop.keys).toHaveLength(3);
    shop.heal();
    await pressed(result.current[1], "tea");
    await waitFor(() => expect(result.current[0]).toEqual({ orderId: 1 }));
    expect([shop.runs(), new Set(shop.keys).size]).toEqual([1, 1]);
  });

  it("starts a new action with a new key for a press after an answer", async () => {
    const shop = checkout();
    const { result } = mounted(shop);
    await pressed(result.current[1], "tea");
    await waitFor(() => expect(result.current[0]).toEqual({ orderId: 1 }));
    await pressed(result.current[1], "tea");
    await waitFor(() => expect(result.current[0]).toEqual({ orderId: 2 }));
    expect(new Set(shop.keys).size).toBe(2);
  });

  it("refuses other fields while a submission is on its way, until its answer shows", async () => {
    const shop = checkout();
    const release = shop.holdNext();
    const { result } = mounted(shop);
    await pressed(result.current[1], "tea");
    await waitFor(() => expect(shop.runs()).toBe(1));
    await pressed(result.current[1], "kettle");
    expect(isActionRefusal(result.current[0]) && result.current[0].idempotencyError.code).toBe("IN_PROGRESS");
    release();
    await waitFor(() => expect(result.current[0]).toEqual({ orderId: 1 }));
    expect([shop.runs(), shop.keys.length]).toEqual([1, 1]);
  });

  it("says its own refusals in the app's words: no answer, and another input while one is on its way", async () => {
    const shop = checkout();
    shop.loseNext("answer", { always: true });
    const messages = {
      UNREACHABLE: "Keine Verbindung: nochmals senden, es wird nicht doppelt ausgeführt.",
      OTHER_INPUT_IN_FLIGHT: "Ihre letzte Bestellung ist noch unterwegs.",
    };
    const { result } = mounted(shop, { messages });
    await pressed(result.current[1], "tea");
    await waitFor(() =>
      expect(isActionRefusal(result.current[0]) && result.current[0].idempotencyError).toMatchObject({
        code: "UNREACHABLE",
        message: messages.UNREACHABLE,
      }),
    );
    const busy = checkout();
    const release = busy.holdNext();
    const other = mounted(busy, { messages });
    await pressed(other.result.current[1], "tea");
    await waitFor(() => expect(busy.runs()).toBe(1));
    await pressed(other.result.current[1], "kettle");
    await waitFor(() =>
      expect(isActionRefusal(other.result.current[0]) && other.result.current[0].idempotencyError).toMatchObject({
        code: "IN_PROGRESS",
        message: messages.OTHER_INPUT_IN_FLIGHT,
      }),
    );
    release();
    await waitFor(() => expect(other.result.current[0]).toEqual({ orderId: 1 }));
  });

  it("after a reload mid-submit, looks the action up and shows its state, without running it again", async () => {
    const shop = checkout();
    const storage = sessionStorageLike();
    const release = shop.holdNext();
    const before = mounted(shop, { storage });
    await pressed(before.result.current[1], "tea");
    await waitFor(() => expect(shop.runs()).toBe(1));
    // The page is gone before the answer: what arrives then is for the next page to look up.
    before.unmount();
    release();
    await waitFor(() => expect(shop.answered()).toBe(1));
    const after = mounted(shop, { storage });
    await waitFor(() => expect(after.result.current[0]).toEqual({ orderId: 1 }));
    expect(shop.runs()).toBe(1);
    // The action has its answer: the next press is another order.
    await pressed(after.result.current[1], "tea");
    await waitFor(() => expect(after.result.current[0]).toEqual({ orderId: 2 }));
  });

  it("after a reload, finds nothing for a submission the server never got, and the same press sends its key", async () => {
    const shop = checkout();
    const storage = sessionStorageLike();
    shop.loseNext("request", { always: true });
    const before = mounted(shop, { storage, retry: false });
    await pressed(before.result.current[1], "tea");
    await waitFor(() => expect(before.result.current[0]).toMatchObject({ idempotencyError: { code: "UNREACHABLE" } }));
    before.unmount();
    shop.heal();
    const after = mounted(shop, { storage });
    await waitFor(() => expect(shop.lookups()).toBe(1));
    await waitFor(() => expect(after.result.current[2]).toBe(false));
    expect(after.result.current[0]).toEqual({});
    await pressed(after.result.current[1], "tea");
    await waitFor(() => expect(after.result.current[0]).toEqual({ orderId: 1 }));
    expect([shop.runs(), new Set(shop.keys).size]).toEqual([1, 1]);
  });

  it("while it looks an action up after a reload, joins a press with its fields and refuses one with others", async () => {
    const shop = checkout();
    const storage = sessionStorageLike();
    shop.loseNext("answer", { always: true });
    const before = mounted(shop, { storage, retry: false });
    await pressed(before.result.current[1], "tea");
    await waitFor(() => expect(before.result.current[0]).toMatchObject({ idempotencyError: { code: "UNREACHABLE" } }));
    before.unmount();
    shop.heal();
    const release = shop.holdLookups();
    const after = mounted(shop, { storage });
    await waitFor(() => expect(shop.lookups()).toBe(1));
    await pressed(after.result.current[1], "tea");
    await pressed(after.result.current[1], "kettle");
    expect(isActionRefusal(after.result.current[0]) && after.result.current[0].idempotencyError.code).toBe(
      "IN_PROGRESS",
    );
    release();
    await waitFor(() => expect(after.result.current[0]).toEqual({ orderId: 1 }));
    expect([shop.runs(), shop.keys.length]).toEqual([1, 1]);
  });

  it("looks an action up once under StrictMode, whose effects run twice", async () => {
    const shop = checkout();
    const storage = sessionStorageLike();
    shop.loseNext("answer", { always: true });
    const before = mounted(shop, { storage, retry: false });
    await pressed(before.result.current[1], "tea");
    await waitFor(() => expect(isActionRefusal(before.result.current[0])).toBe(true));
    before.unmount();
    shop.heal();
    const after = mounted(shop, { storage }, { strict: true });
    await waitFor(() => expect(after.result.current[0]).toEqual({ orderId: 1 }));
    expect(shop.lookups()).toBe(1);
  });
});
