/**
 * `idempotentAction` as Next.js calls a Server Action: with the submitted form's FormData (after the previous state,
 * under `useActionState`), against drizzleStore on PostgreSQL and PGlite. What a user relies on: one order per
 * rendered form, the same answer to every resubmission, refusals the form can show, and `redirect()` and
 * `notFound()` ending a resubmission as they ended the first.
 */
import { memoryStore } from "@idemkit/core";
import { drizzleStore } from "@idemkit/drizzle";
import { type Driver, gate, type NotesDatabase, notesDatabases } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import { notFound, redirect } from "next/navigation.js";
import postgres from "postgres";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, expectTypeOf, it, vi } from "vitest";
import { ActionKeyField } from "../src/client/action-key-field.js";
import { keyInput, LOOKUP_FIELD } from "../src/form-contract.js";
import {
  type ActionRefusal,
  type FormMessageCode,
  type FormMessages,
  IDEMPOTENCY_KEY_FIELD,
  IdempotencyKeyField,
  idempotentAction,
  isActionRefusal,
  submittedValue,
} from "../src/index.js";

const databases = notesDatabases(4);

interface OrderState {
  orderId?: number;
  error?: string;
}

/** A checkout action as an app writes it for `useActionState`, counting its runs. */
function checkout(database: NotesDatabase, { held }: { held?: Promise<void> } = {}) {
  let runs = 0;
  const placeOrder = idempotentAction(
    "checkout.placeOrder",
    async ({ tx, key }, _previous: OrderState, form: FormData): Promise<OrderState> => {
      runs++;
      await held;
      const item = String(form.get("item"));
      if (item === "") return { error: "Choose an item" };
      await tx.execute(sql`insert into notes (key) values (${key})`);
      if (item === "gone") notFound();
      if (form.get("next") === "receipt") redirect(`/orders/${runs}?from=checkout;1`);
      if (item === "broken") throw new Error("the warehouse is down");
      return { orderId: runs };
    },
    {
      store: drizzleStore({ db: database.db }),
      scope: async () => "alice",
      // A state that asks for a correction is not the answer to the key: the corrected form runs with it.
      stores: (state) => (state as OrderState).error === undefined,
    },
  );
  const notes = async (key: string) => {
    const rows = await database.query<{ n: number }>("select count(*)::int as n from notes where key = $1", [key]);
    return rows[0]?.n ?? 0;
  };
  return { placeOrder, runs: () => runs, notes };
}

/** The FormData a rendered form submits: its fields, its key, and the fields React adds (`$ACTION_…`). */
function submission(key: string | undefined, fields: Record<string, string>, actionKey = "k1") {
  const form = new FormData();
  if (key !== undefined) form.set(IDEMPOTENCY_KEY_FIELD, key);
  for (const [field, value] of Object.entries(fields)) form.set(field, value);
  form.set("$ACTION_REF_1", "");
  form.set("$ACTION_KEY", actionKey);
  return form;
}

/** What the client hook sends to ask what became of a key: the key and the lookup mark, no fields. */
function lookup(key: string) {
  const form = new FormData();
  form.set(IDEMPOTENCY_KEY_FIELD, key);
  form.set(LOOKUP_FIELD, "1");
  return form;
}

const newKey = () => globalThis.crypto.randomUUID();
const digestOf = (error: unknown) => (error as { digest?: string }).digest;

describe.each(["postgres.js", "PGlite"] satisfies Driver[])("idempotentAction on %s", (driver) => {
  it("runs the first submission; a resubmission of the rendered form gets its state again, and nothing runs twice", async () => {
    const shop = checkout(databases[driver]);
    const key = newKey();
    expect(await shop.placeOrder({}, submission(key, { item: "tea" }))).toEqual({ orderId: 1 });
    // Another previous state and another $ACTION_KEY (a remount): the same rendered form all the same.
    expect(await shop.placeOrder({ orderId: 9 }, submission(key, { item: "tea" }, "k2"))).toEqual({ orderId: 1 });
    expect([shop.runs(), await shop.notes(key)]).toEqual([1, 1]);
  });

  it("runs concurrent submissions of one form once, and each gets its state", async () => {
    const shop = checkout(databases[driver]);
    const key = newKey();
    const states = await Promise.all(
      Array.from({ length: 5 }, () => shop.placeOrder({}, submission(key, { item: "tea" }))),
    );
    expect(states).toEqual(states.map(() => ({ orderId: 1 })));
    expect([shop.runs(), await shop.notes(key)]).toEqual([1, 1]);
  });

  it("refuses a form without its key field, or with a malformed key, in words for its user, and logs the fix once", async () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const shop = checkout(databases[driver]);
      const missing = await shop.placeOrder({}, submission(undefined, { item: "tea" }));
      expect(missing).toEqual({
        idempotencyError: {
          code: "KEY_MISSING",
          retryable: false,
          retryAfterMs: undefined,
          message: "This form could not be sent as it was, and nothing was done. Reload the page and try again.",
        },
      });
      const malformed = await shop.placeOrder({}, submission("not a key", { item: "tea" }));
      expect(isActionRefusal(malformed) && malformed.idempotencyError.code).toBe("KEY_INVALID");
      await shop.placeOrder({}, submission(undefined, { item: "tea" }));
      expect(shop.runs()).toBe(0);
      const lines = logged.mock.calls.map(([line]) => String(line));
      expect(lines.filter((line) => line.includes("<IdempotencyKeyField />"))).toHaveLength(1);
    } finally {
      logged.mockRestore();
    }
  });

  it("refuses the key with other fields, and keeps the first state", async () => {
    const shop = checkout(databases[driver]);
    const key = newKey();
    await shop.placeOrder({}, submission(key, { item: "tea" }));
    const other = await shop.placeOrder({}, submission(key, { item: "kettle" }));
    expect(isActionRefusal(other) && other.idempotencyError.code).toBe("FINGERPRINT_MISMATCH");
    expect(await shop.placeOrder({}, submission(key, { item: "tea" }))).toEqual({ orderId: 1 });
    expect(shop.runs()).toBe(1);
  });

  it("keeps nothing of a state that asks for a correction, so the corrected form runs with the same key", async () => {
    const shop = checkout(databases[driver]);
    const key = newKey();
    expect(await shop.placeOrder({}, submission(key, { item: "" }))).toEqual({ error: "Choose an item" });
    expect(await shop.placeOrder({ error: "Choose an item" }, submission(key, { item: "tea" }))).toEqual({
      orderId: 2,
    });
    expect(await shop.placeOrder({}, submission(key, { item: "tea" }))).toEqual({ orderId: 2 });
    expect([shop.runs(), await shop.notes(key)]).toEqual([2, 1]);
  });

  it("compares files by their bytes, and passes bound arguments through without comparing them", async () => {
    const database = databases[driver];
    let runs = 0;
    const upload = idempotentAction(
      "documents.upload",
      async (_idempotency, folder: string, form: FormData) => {
        runs++;
        return { folder, size: (form.get("file") as File).size };
      },
      { store: drizzleStore({ db: database.db }), scope: () => "alice" },
    );
    const key = newKey();
    const withFile = (text: string) => {
      const form = submission(key, {});
      form.set("file", new File([text], "note.txt"));
      return form;
    };
    const intoInbox = upload.bind(null, "inbox");
    expect(await intoInbox(withFile("hello"))).toEqual({ folder: "inbox", size: 5 });
    expect(await intoInbox(withFile("hello"))).toEqual({ folder: "inbox", size: 5 });
    const other = await intoInbox(withFile("hello, world"));
    expect(isActionRefusal(other) && other.idempotencyError.code).toBe("FINGERPRINT_MISMATCH");
    expect(runs).toBe(1);
  });

  it("keeps the order of an action that redirects, and redirects its resubmission to the same place", async () => {
    const shop = checkout(databases[driver]);
    const key = newKey();
    const form = () => submission(key, { item: "tea", next: "receipt" });
    const first = await shop.placeOrder({}, form()).catch((thrown: unknown) => thrown);
    // Outside a request Next.js redirects with "replace", inside an action with "push": the replay keeps either.
    expect(digestOf(first)).toMatch(/^NEXT_REDIRECT;(push|replace);\/orders\/1\?from=checkout;1;307;$/);
    const again = await shop.placeOrder({}, form()).catch((thrown: unknown) => thrown);
    expect(digestOf(again)).toBe(digestOf(first));
    expect([shop.runs(), await shop.notes(key)]).toEqual([1, 1]);
  });

  it("answers a resubmission of an action that called notFound() with notFound() again, its writes undone", async () => {
    const shop = checkout(databases[driver]);
    const key = newKey();
    for (let attempt = 0; attempt < 2; attempt++) {
      const thrown = await shop.placeOrder({}, submission(key, { item: "gone" })).catch((error: unknown) => error);
      expect(digestOf(thrown)).toBe("NEXT_HTTP_ERROR_FALLBACK;404");
    }
    expect([shop.runs(), await shop.notes(key)]).toEqual([1, 0]);
  });

  it("answers a failure that merely wraps a redirect as the failure it is, keeping nothing", async () => {
    const database = databases[driver];
    let runs = 0;
    const wrapped = idempotentAction(
      "checkout.wrapped",
      async (_idempotency, _form: FormData) => {
        runs++;
        try {
          redirect("/elsewhere");
        } catch (cause) {
          throw new Error("could not finish", { cause });
        }
      },
      { store: drizzleStore({ db: database.db }), scope: () => "alice" },
    );
    const key = newKey();
    await expect(wrapped(submission(key, {}))).rejects.toThrow("could not finish");
    await expect(wrapped(submission(key, {}))).rejects.toThrow("could not finish");
    expect(runs).toBe(2);
  });

  it("throws an action's own failure on, keeping nothing of it, so that the resubmission runs again", async () => {
    const shop = checkout(databases[driver]);
    const key = newKey();
    await expect(shop.placeOrder({}, submission(key, { item: "broken" }))).rejects.toThrow("the warehouse is down");
    expect(await shop.notes(key)).toBe(0);
    await expect(shop.placeOrder({}, submission(key, { item: "broken" }))).rejects.toThrow("the warehouse is down");
    expect(shop.runs()).toBe(2);
  });

  it("in lease mode, refuses a resubmission while the first still runs as retryable, with when to try", async () => {
    const first = gate();
    const database = databases[driver];
    let runs = 0;
    const charge = idempotentAction(
      "checkout.charge",
      async ({ tx }, form: FormData) => {
        expect(tx).toBeUndefined();
        runs++;
        await first.opened;
        return { charged: String(form.get("amount")) };
      },
      { store: drizzleStore({ db: database.db }), mode: "lease", scope: () => "alice", renderBack: ["amount"] },
    );
    const key = newKey();
    // The card's code and the password are compared like any field, and never carried back into the page.
    const fields = { amount: "12", "cc-csc": "123", password: "hunter2" };
    const running = charge(submission(key, fields));
    await expect.poll(() => runs).toBe(1);
    const duplicate = await charge(submission(key, fields));
    expect(isActionRefusal(duplicate) && duplicate.idempotencyError).toMatchObject({
      code: "IN_PROGRESS",
      message: "This form is still being sent. Send it again in a moment: it will not be done twice.",
      retryable: true,
      retryAfterMs: expect.any(Number),
    });
    // Without JavaScript the page renders anew: the refusal keeps the submission, for the form to send it again.
    expect(isActionRefusal(duplicate) && duplicate.submitted).toEqual({ key, fields: [["amount", "12"]] });
    first.open();
    expect(JSON.stringify(duplicate)).not.toMatch(/123|hunter2/);
    expect(await running).toEqual({ charged: "12" });
    expect(await charge(submission(key, fields))).toEqual({ charged: "12" });
    expect(runs).toBe(1);
  });

  it("in lease mode, a value that cannot be stored keeps its key refused: pressed twice, charged once", async () => {
    let charges = 0;
    const pay = idempotentAction(
      "checkout.pay",
      async (_idempotency, form: FormData) => {
        charges++;
        return { paidAt: new Date(), amount: String(form.get("amount")) };
      },
      {
        store: drizzleStore({ db: databases[driver].db }),
        mode: "lease",
        scope: () => "alice",
        renderBack: ["amount"],
      },
    );
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const key = newKey();
      for (let press = 0; press < 2; press++) {
        const answer = await pay(submission(key, { amount: "12" }));
        expect(isActionRefusal(answer) && answer.idempotencyError).toMatchObject({
          code: "RAN_WITHOUT_ANSWER",
          retryable: false,
        });
        // The charge was made: the form keeps its key, as a new one would charge again.
        expect(isActionRefusal(answer) && answer.submitted).toEqual({ key, fields: [["amount", "12"]] });
      }
    } finally {
      logged.mockRestore();
    }
    expect(charges).toBe(1);
  });

  it("says an unknown outcome as such, and keeps the submission: sent again with it, it is one order", async () => {
    const database = databases[driver];
    const store = drizzleStore({ db: database.db });
    let commitAnswersLost = 1;
    // The order commits, and the database's answer to COMMIT never arrives: the connection broke after it was sent.
    const lossy: typeof store = {
      ...store,
      atomic: {
        ...store.atomic,
        async transaction(work) {
          const committed = await store.atomic.transaction(work);
          if (commitAnswersLost-- > 0) throw new Error("Connection terminated unexpectedly");
          return committed;
        },
      },
    };
    let runs = 0;
    const placeOrder = idempotentAction(
      "checkout.placeOrder",
      async ({ tx, key }, _previous: OrderState, _form: FormData): Promise<OrderState> => {
        runs++;
        await tx.execute(sql`insert into notes (key) values (${key})`);
        return { orderId: runs };
      },
      { store: lossy, scope: () => "alice", renderBack: ["item"] },
    );
    const key = newKey();
    const unknown = await placeOrder({}, submission(key, { item: "tea" }));
    expect(unknown).toEqual({
      idempotencyError: {
        code: "OUTCOME_UNKNOWN",
        message:
          "We could not confirm whether this went through. Send the form again to check: it will not be done twice.",
        retryable: true,
        retryAfterMs: expect.any(Number),
      },
      submitted: { key, fields: [["item", "tea"]] },
    });
    // Without JavaScript the page renders anew, with the kept key and fields: the form as the user sends it again.
    const rendered = renderToStaticMarkup(createElement(ActionKeyField, { state: unknown }, keyInput(newKey())));
    expect(rendered).toBe(`<input type="hidden" name="idempotency-key" value="${key}"/>`);
    const again = submission(key, { item: submittedValue(unknown, "item") ?? "" });
    expect(await placeOrder(unknown, again)).toEqual({ orderId: 1 });
    expect([runs, await checkout(database).notes(key)]).toEqual([1, 1]);
  });

  it("answers a lookup of a key with what a resubmission would get, and never runs the action for it", async () => {
    const shop = checkout(databases[driver]);
    const key = newKey();
    expect(await shop.placeOrder({}, lookup(key))).toMatchObject({
      idempotencyOutcome: "unknown",
      idempotencyError: { code: "NOTHING_RECORDED" },
    });
    await shop.placeOrder({}, submission(key, { item: "tea" }));
    expect(await shop.placeOrder({ orderId: 9 }, lookup(key))).toEqual({ orderId: 1 });
    const redirected = newKey();
    const first = await shop
      .placeOrder({}, submission(redirected, { item: "tea", next: "receipt" }))
      .catch((thrown: unknown) => thrown);
    const looked = await shop.placeOrder({}, lookup(redirected)).catch((thrown: unknown) => thrown);
    expect(digestOf(looked)).toBe(digestOf(first));
    const bobs = idempotentAction("checkout.placeOrder", async (_idempotency, _form: FormData) => ({ orderId: 0 }), {
      store: drizzleStore({ db: databases[driver].db }),
      scope: () => "bob",
    });
    expect(await bobs(lookup(key))).toMatchObject({
      idempotencyOutcome: "unknown",
      idempotencyError: { code: "NOTHING_RECORDED" },
    });
    expect([shop.runs(), await shop.notes(key)]).toEqual([2, 1]);
  });

  // PGlite has one connection: a lookup there waits for the transaction that holds it, and reads the stored state.
  it.runIf(driver === "postgres.js")("answers a lookup while the first submission runs as running", async () => {
    const held = gate();
    const shop = checkout(databases[driver], { held: held.opened });
    const key = newKey();
    const running = shop.placeOrder({}, submission(key, { item: "tea" }));
    await expect.poll(() => shop.runs()).toBe(1);
    expect(await shop.placeOrder({}, lookup(key))).toMatchObject({
      idempotencyOutcome: "running",
      idempotencyError: { code: "IN_PROGRESS" },
    });
    held.open();
    await running;
    expect(await shop.placeOrder({}, lookup(key))).toEqual({ orderId: 1 });
    expect(shop.runs()).toBe(1);
  });
});

describe("idempotentAction's edges", () => {
  it("in lease mode, says an answer the store did not take may have gone through, and the press it asks for only checks: one charge", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const store = memoryStore();
      let failures = 3;
      let storeAway = false;
      const flaky: typeof store = {
        ...store,
        complete: (...args) =>
          failures-- > 0 ? Promise.reject(new Error("connection reset")) : store.complete(...args),
        get: (...args) => (storeAway ? Promise.reject(new Error("connection reset")) : store.get(...args)),
      };
      let charges = 0;
      const pay = idempotentAction(
        "checkout.pay",
        async (_idempotency, form: FormData) => {
          charges++;
          return { paid: String(form.get("amount")) };
        },
        { store: flaky, mode: "lease", scope: () => "alice", renderBack: ["amount"] },
      );
      const key = newKey();
      const answering = pay(submission(key, { amount: "12" }));
      await vi.advanceTimersByTimeAsync(600);
      const refused = await answering;
      expect(refused).toMatchObject({
        idempotencyError: { code: "RAN_UNRECORDED", retryable: false },
        submitted: { key, fields: [["amount", "12"]], check: true },
      });
      // Without JavaScript the page renders anew: the form carries the key and the check field, so the press the
      // message asks for is a lookup, which never runs the action.
      expect(renderToStaticMarkup(createElement(ActionKeyField, { state: refused }, keyInput(newKey())))).toBe(
        `<input type="hidden" name="idempotency-key" value="${key}"/>` +
          '<input type="hidden" name="idempotency-lookup" value="check"/>',
      );
      const check = () => {
        const form = submission(key, { amount: "12" });
        form.set(LOOKUP_FIELD, "check");
        return pay(form);
      };
      expect(await check()).toMatchObject({ idempotencyOutcome: "running", submitted: { key, check: true } });
      // A check the store cannot answer just now asks to check again: never "nothing was done", never a send.
      storeAway = true;
      expect(await check()).toEqual({
        idempotencyError: {
          code: "STORE_UNAVAILABLE",
          message: "We could not check how this ended just now. Press the button again in a moment to check again.",
          retryable: true,
          retryAfterMs: expect.any(Number),
        },
        submitted: { key, fields: [["amount", "12"]], check: true },
      });
      storeAway = false;
      // The engine went on storing the answer while it held the lease; the next check finds it.
      await vi.advanceTimersByTimeAsync(1_000);
      expect(await check()).toEqual({ paid: "12" });
      expect(charges).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it.each(["password", "new-password", "cc-number", "cc-csc", "cardNumber", "one-time-code", "otp"])(
    "refuses to render %s back into the page, when the action is made",
    (name) => {
      expect(() =>
        idempotentAction("checkout.pay", async (_idempotency, _form: FormData) => ({}), {
          store: memoryStore(),
          scope: () => "alice",
          renderBack: ["amount", name],
        }),
      ).toThrow(/renderBack names .* which looks like a secret/);
    },
  );

  it("refuses a submission while the database is away as retryable, and runs nothing", async () => {
    const away = postgres("postgres://idemkit@127.0.0.1:1/away", { max: 1, connect_timeout: 1, onnotice: () => {} });
    let runs = 0;
    const placeOrder = idempotentAction(
      "checkout.placeOrder",
      async (_idempotency, _form: FormData) => {
        runs++;
        return { orderId: 1 };
      },
      { store: drizzleStore({ db: drizzle({ client: away }) }), scope: () => "alice" },
    );
    try {
      const answer = await placeOrder(submission(newKey(), { item: "tea" }));
      expect(isActionRefusal(answer) && answer.idempotencyError).toMatchObject({
        code: "STORE_UNAVAILABLE",
        retryable: true,
      });
      expect(runs).toBe(0);
    } finally {
      await away.end({ timeout: 0 });
    }
  });

  it("refuses a value JSON would not give back, and keeps the key refused; stores it through a transformer", async () => {
    let runs = 0;
    const placed = async (_idempotency: unknown, _form: FormData) => {
      runs++;
      return { at: new Date(0), note: undefined };
    };
    const options = { store: drizzleStore({ db: databases.PGlite.db }), scope: () => "alice" };
    const plain = idempotentAction("checkout.placeOrder", placed, options);
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const key = newKey();
      // Atomic mode: what ran is rolled back and nothing is kept, so the form says so. Nothing is kept for its key
      // either, so the submission is kept (the resend rule's 5xx): the press it asks for runs it anew, once.
      const answer = await plain(submission(key, { item: "tea" }));
      expect(answer).toEqual({
        idempotencyError: {
          code: "ROLLED_BACK",
          message:
            "This could not be completed, and nothing was done. You can try again; if it keeps happening, please tell us.",
          retryable: false,
          retryAfterMs: undefined,
        },
        submitted: { key, fields: [] },
      });
      expect(runs).toBe(1);
      expect(await plain(submission(key, { item: "tea" }))).toMatchObject({
        idempotencyError: { code: "ROLLED_BACK" },
      });
      expect(runs).toBe(2);
      expect(String(logged.mock.calls[0]?.[0])).toMatch(/not plain JSON/);
    } finally {
      logged.mockRestore();
    }
    const dates = {
      serialize: (value: unknown) => ({ at: (value as { at: Date }).at.toISOString() }),
      deserialize: (value: unknown) => ({ at: new Date((value as { at: string }).at) }),
    };
    const transformed = idempotentAction("checkout.placeOrder", placed, { ...options, transformer: dates });
    const key = newKey();
    expect(await transformed(submission(key, { item: "tea" }))).toEqual({ at: new Date(0), note: undefined });
    expect(await transformed(submission(key, { item: "tea" }))).toEqual({ at: new Date(0) });
  });

  it("tells the form's user of a refusal in the app's own words, per code or per request, and never fails on them", async () => {
    let runs = 0;
    const placed = async (_idempotency: unknown, _form: FormData) => ({ orderId: ++runs });
    const store = memoryStore();
    const messagesOf = (messages: FormMessages | undefined) =>
      idempotentAction("checkout.placeOrder", placed, {
        store,
        scope: () => "alice",
        messages,
      });
    const key = newKey();
    await messagesOf(undefined)(submission(key, { item: "tea" }));
    const mismatchWith = async (messages: FormMessages) => {
      const answer = await messagesOf(messages)(submission(key, { item: "coffee" }));
      return isActionRefusal(answer) ? answer.idempotencyError : undefined;
    };
    // A message per code, the others left to idemkit's English.
    expect(await mismatchWith({ FINGERPRINT_MISMATCH: "Ce formulaire a déjà été envoyé." })).toMatchObject({
      code: "FINGERPRINT_MISMATCH",
      message: "Ce formulaire a déjà été envoyé.",
    });
    // A function answers within the request (the user's language read there), and may be async.
    let language = "de";
    const translations: Record<string, Record<string, string>> = {
      de: { FINGERPRINT_MISMATCH: "Dieses Formular wurde schon mit anderen Werten gesendet." },
    };
    const perRequest = async (code: FormMessageCode) => translations[language]?.[code];
    expect((await mismatchWith(perRequest))?.message).toBe("Dieses Formular wurde schon mit anderen Werten gesendet.");
    language = "en";
    expect((await mismatchWith(perRequest))?.message).toBe(
      "This form was already sent with other values. Reload the page to send it again with these.",
    );
    // Copy that throws is the app's bug to see, never a different outcome for the user.
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      const failing = await mismatchWith(() => {
        throw new Error("no catalogue");
      });
      expect(failing).toMatchObject({ code: "FINGERPRINT_MISMATCH", message: expect.stringMatching(/other values/) });
      expect(String(logged.mock.calls[0]?.[0])).toMatch(/messages threw for FINGERPRINT_MISMATCH/);
    } finally {
      logged.mockRestore();
    }
    expect(runs).toBe(1);
  });

  it("types the protected action as useActionState calls it: the previous state may be the last refusal", () => {
    const placeOrder = idempotentAction(
      "checkout.placeOrder",
      async (_idempotency, _previous: OrderState, _form: FormData): Promise<OrderState> => ({ orderId: 1 }),
      { store: drizzleStore({ db: databases.PGlite.db }), scope: () => "alice" },
    );
    expectTypeOf(placeOrder).toEqualTypeOf<
      (previous: OrderState | ActionRefusal, form: FormData) => Promise<OrderState | ActionRefusal>
    >();
  });

  it("renders the key field as a hidden input, and only for a request: a prerendered page would share one key", async () => {
    expect(renderToStaticMarkup(keyInput("a-key"))).toBe('<input type="hidden" name="idempotency-key" value="a-key"/>');
    await expect(IdempotencyKeyField()).rejects.toThrow(/outside a request scope/);
  });
});
