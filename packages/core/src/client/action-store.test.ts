import { describe, expect, it } from "vitest";
import { actionStore, defaultStorage, formActionStore, type KeyStorage } from "./action-store.js";

function mapStorage(): KeyStorage & { entries: Map<string, string> } {
  const entries = new Map<string, string>();
  return {
    entries,
    getItem: (name) => entries.get(name) ?? null,
    setItem: (name, value) => void entries.set(name, value),
    removeItem: (name) => void entries.delete(name),
  };
}

const action = { key: "8e0f3c1a-7d1b-4b5e-9a51-3f2b1c0d9e8f", fingerprint: "ab".repeat(32) };

describe("actionStore", () => {
  it("keeps the action in the storage, where a reloaded page finds it", () => {
    const storage = mapStorage();
    actionStore(storage, "idemkit:checkout.placeOrder").write(action);
    expect(actionStore(storage, "idemkit:checkout.placeOrder").read()).toEqual(action);
    expect(actionStore(storage, "idemkit:other").read()).toBeUndefined();
  });

  it("forgets the action on clear", () => {
    const storage = mapStorage();
    const store = actionStore(storage, "a");
    store.write(action);
    store.clear();
    expect(store.read()).toBeUndefined();
    expect(storage.entries.size).toBe(0);
  });

  it("ignores an entry it cannot read (edited by hand, or from another version)", () => {
    const storage = mapStorage();
    for (const text of ["{", "null", "[]", '{"key":1,"fingerprint":"x"}', '{"key":"k"}']) {
      storage.setItem("a", text);
      expect(actionStore(storage, "a").read()).toBeUndefined();
    }
  });

  it("keeps the key in memory when the storage refuses to write (quota, privacy mode)", () => {
    const refusing: KeyStorage = {
      getItem: () => null,
      setItem: () => {
        throw new DOMException("quota exceeded", "QuotaExceededError");
      },
      removeItem: () => {},
    };
    const store = actionStore(refusing, "a");
    store.write(action);
    expect(store.read()).toEqual(action);
  });

  it("works in memory without a storage (server rendering, storage: 'memory')", () => {
    const store = actionStore(undefined, "a");
    expect(store.read()).toBeUndefined();
    store.write(action);
    expect(store.read()).toEqual(action);
  });
});

describe("actionStore with tabs (sessionStorage, which a duplicated tab gets a copy of)", () => {
  const original = () => ({ id: "tab-1" });
  const duplicate = () => ({ id: "tab-2", copiedFrom: ["tab-1"] });

  it("reads back its own tab's action, after a reload too, but not the one copied from the tab it duplicates", () => {
    const storage = mapStorage();
    actionStore(storage, "a", undefined, original).write(action);
    expect(actionStore(storage, "a", undefined, original).read()).toEqual({ ...action, tab: "tab-1" });
    expect(actionStore(storage, "a", undefined, duplicate).read()).toBeUndefined();
    actionStore(storage, "a", undefined, duplicate).write(action);
    expect(actionStore(storage, "a", undefined, duplicate).read()).toEqual({ ...action, tab: "tab-2" });
    // A copy of the copy ignores both tabs it came from.
    actionStore(storage, "b", undefined, original).write(action);
    const copyOfCopy = () => ({ id: "tab-3", copiedFrom: ["tab-1", "tab-2"] });
    expect(actionStore(storage, "b", undefined, copyOfCopy).read()).toBeUndefined();
  });

  it("counts an action as its own while the tab is not known, and one another tab wrote unless copied from it", () => {
    const storage = mapStorage();
    actionStore(storage, "a", undefined, original).write(action);
    expect(actionStore(storage, "a", undefined, () => undefined).read()).toEqual({ ...action, tab: "tab-1" });
    expect(actionStore(storage, "a", undefined, () => ({ id: "tab-3" })).read()).toEqual({ ...action, tab: "tab-1" });
    actionStore(storage, "b").write(action);
    expect(actionStore(storage, "b", undefined, duplicate).read()).toEqual(action);
  });
});

describe("defaultStorage", () => {
  it("is undefined where there is no sessionStorage, as during server rendering", () => {
    expect(defaultStorage()).toBeUndefined();
  });
});

describe("formActionStore: a mounted form's store, holding its name", () => {
  it("keeps a second form on a held name in memory, warned once, until the first lets the name go", () => {
    const storage = mapStorage();
    const warned: unknown[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => warned.push(args[0]);
    try {
      const first = formActionStore(storage, "orders", { current: undefined }, () => undefined);
      const second = formActionStore(storage, "orders", { current: undefined }, () => undefined);
      const releaseFirst = first.hold("first form");
      const releaseSecond = second.hold("second form");
      second.write(action);
      expect(first.read()).toBeUndefined();
      expect(second.read()).toEqual(action);
      expect(warned).toHaveLength(1);
      releaseSecond();
      releaseFirst();
      const third = formActionStore(storage, "orders", { current: undefined }, () => undefined);
      third.hold("third form");
      third.write(action);
      expect(formActionStore(storage, "orders", { current: undefined }, () => undefined).read()).toEqual(action);
    } finally {
      console.warn = warn;
    }
  });

  it('keeps a form\'s action in memory alone with storage "memory"', () => {
    const memory = { current: undefined };
    const form = formActionStore("memory", "orders", memory, () => undefined);
    form.hold("a form")();
    form.write(action);
    expect(memory.current).toEqual(action);
  });
});
