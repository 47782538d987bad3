/**
 * Stored answers encrypted at rest (`encryptedStore` over `drizzleStore`), on PostgreSQL and PGlite, through the
 * Fetch adapter as a route handler answers: what the table holds is sealed, the replay is the first answer byte for
 * byte, rotated keys still open older answers, and an answer that does not open is refused without running anything;
 * and what `redact` leaves of an answer is all that is kept.
 */
import { type AnswerKeys, encryptedStore } from "@idemkit/core";
import { withIdempotency } from "@idemkit/core/fetch";
import { type Driver, notesDatabases } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { drizzleStore } from "../src/index.js";

const databases = notesDatabases(4);

const keyOf = (seed: number) => new Uint8Array(32).fill(seed);
const KEYS: AnswerKeys = { current: "2026-12", keys: { "2026-12": keyOf(1), "2026-06": keyOf(2) } };

/** A route handler that places an order (a note) and answers its secret, counting its runs. */
function orders(driver: Driver, answerKeys: AnswerKeys | undefined) {
  const database = databases[driver];
  let runs = 0;
  const store = drizzleStore({ db: database.db });
  const POST = withIdempotency(
    async (request, { tx, key }) => {
      runs++;
      await tx.execute(sql`insert into notes (key) values (${key})`);
      return Response.json({ card: "4242 4242 4242 4242", note: await request.text() }, { status: 201 });
    },
    {
      store: answerKeys ? encryptedStore(store, answerKeys) : store,
      scope: () => "alice",
      replayCacheSize: 0,
    },
  );
  const send = (key: string, body = "tea") =>
    POST(new Request("http://shop.test/orders", { method: "POST", headers: { "idempotency-key": key }, body }));
  return { send, runs: () => runs, database };
}

const storedBody = async (driver: Driver, key: string) => {
  const rows = await databases[driver].query<{ response_body: string }>(
    "select response_body from idempotency_keys where key = $1",
    [key],
  );
  return rows[0]?.response_body ?? "";
};

describe.each(["postgres.js", "PGlite"] satisfies Driver[])("encryptedStore on %s", (driver) => {
  it("keeps the answer sealed in the table, and replays it byte for byte", async () => {
    const shop = orders(driver, KEYS);
    const key = globalThis.crypto.randomUUID();
    const first = await shop.send(key);
    const again = await shop.send(key);
    expect([first.status, again.status, again.headers.get("idempotent-replayed")]).toEqual([201, 201, "true"]);
    expect(await again.text()).toBe(await first.text());
    const sealed = await storedBody(driver, key);
    expect(sealed).toMatch(/^idemkit:aes-256-gcm:2026-12:/);
    expect(sealed).not.toContain("4242");
    expect(shop.runs()).toBe(1);
  });

  it("opens answers sealed with a retired key still given, and seals new ones with the current key", async () => {
    const key = globalThis.crypto.randomUUID();
    const before = orders(driver, { current: "2026-06", keys: { "2026-06": keyOf(2) } });
    const first = await (await before.send(key)).text();
    const after = orders(driver, KEYS);
    expect(await (await after.send(key)).text()).toBe(first);
    const fresh = globalThis.crypto.randomUUID();
    await after.send(fresh);
    expect(await storedBody(driver, fresh)).toMatch(/^idemkit:aes-256-gcm:2026-12:/);
    expect(before.runs() + after.runs()).toBe(2);
  });

  it("refuses an answer it cannot open, and runs nothing in its place: its key gone, or the record altered", async () => {
    const key = globalThis.crypto.randomUUID();
    await orders(driver, KEYS).send(key);
    const withoutItsKey = orders(driver, { current: "2027-01", keys: { "2027-01": keyOf(3) } });
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const refused = await withoutItsKey.send(key);
    const log = logged.mock.calls.map(([line]) => String(line));
    logged.mockRestore();
    expect(refused.status).toBe(500);
    // The key's id is the operator's to read, in the log; the client is told only that nothing ran.
    const { error } = (await refused.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("STORE_MISCONFIGURED");
    expect(error.message).not.toContain("2026-12");
    expect(log).toEqual([expect.stringContaining('its key "2026-12" is not among')]);
    // Another record's sealed answer, copied onto this one: it is bound to the record it was sealed for.
    const other = globalThis.crypto.randomUUID();
    const shop = orders(driver, KEYS);
    await shop.send(other);
    await databases[driver].query(
      "update idempotency_keys set response_body = (select response_body from idempotency_keys where key = $1) where key = $2",
      [other, key],
    );
    const moved = await shop.send(key);
    expect([moved.status, (await moved.json()).error.code]).toEqual([500, "STORE_MISCONFIGURED"]);
    // Its status changed under it: 201 made 200.
    const altered = globalThis.crypto.randomUUID();
    await shop.send(altered);
    await databases[driver].query("update idempotency_keys set response_status = 200 where key = $1", [altered]);
    expect((await shop.send(altered)).status).toBe(500);
    // Read through a store that was not given the keys: refused, never replayed as ciphertext.
    const unwrapped = await orders(driver, undefined).send(other);
    expect([unwrapped.status, (await unwrapped.json()).error.code]).toEqual([500, "STORE_MISCONFIGURED"]);
    // An answer written before encryption was turned on is not replayed as plaintext either.
    const plain = globalThis.crypto.randomUUID();
    await orders(driver, undefined).send(plain);
    expect((await shop.send(plain)).status).toBe(500);
    expect(withoutItsKey.runs() + shop.runs()).toBe(2);
  });

  it("keeps what redact leaves of an answer: the first caller gets all of it, every replay the rest", async () => {
    const database = databases[driver];
    const POST = withIdempotency(
      async (request, { tx, key }) => {
        await tx.execute(sql`insert into notes (key) values (${key})`);
        return Response.json({ orderId: 7, card: "4242 4242 4242 4242", note: await request.text() }, { status: 201 });
      },
      {
        store: drizzleStore({ db: database.db }),
        scope: () => "alice",
        redact: (body) => body.replace(/\d{4} \d{4} \d{4} (\d{4})/, "•••• $1"),
      },
    );
    const key = globalThis.crypto.randomUUID();
    const send = () =>
      POST(
        new Request("http://shop.test/orders", { method: "POST", headers: { "idempotency-key": key }, body: "tea" }),
      );
    expect(await (await send()).json()).toMatchObject({ card: "4242 4242 4242 4242" });
    // From the replay cache, then from the table.
    const fromCache = await send();
    expect([fromCache.status, (await fromCache.json()).card]).toEqual([201, "•••• 4242"]);
    expect(await storedBody(driver, key)).not.toContain("4242 4242");
    expect(await storedBody(driver, key)).toContain("•••• 4242");
  });

  it("refuses keys that are not 32 bytes, and a current key it was not given", () => {
    const store = drizzleStore({ db: databases[driver].db });
    expect(() => encryptedStore(store, { current: "a", keys: { a: new Uint8Array(16) } })).toThrow(/32 bytes/);
    expect(() => encryptedStore(store, { current: "b", keys: { a: keyOf(1) } })).toThrow(/"b" is not in keys/);
    // An unset environment variable, say.
    const unset = { a: undefined } as unknown as Record<string, string>;
    expect(() => encryptedStore(store, { current: "a", keys: unset })).toThrow(/key "a" is missing/);
  });
});
