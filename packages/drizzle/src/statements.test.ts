import { describe, expect, it } from "vitest";
import { statementsFor } from "./record-statements.js";
import { named } from "./statement-text.js";

describe("prepared statement names", () => {
  it("differ when a statement's text does: two versions of idemkit behind one pooler never bind each other's", () => {
    const older = named({ CLAIM: { name: "idemkit_claim", text: "select $1::text as key", columns: ["key"] } });
    const newer = named({
      CLAIM: { name: "idemkit_claim", text: "select $1::text as key, $2::int as fence", columns: ["key", "fence"] },
    });
    expect(older.CLAIM.name).toMatch(/^idemkit_claim_[0-9a-f]{8}$/);
    expect(newer.CLAIM.name).not.toBe(older.CLAIM.name);
  });

  it("differ between tables, and stay the same for one table, so each is prepared once per connection", () => {
    const defaults = Object.values(statementsFor('"idempotency_keys"')).map((statement) => statement.name);
    const again = Object.values(statementsFor('"idempotency_keys"')).map((statement) => statement.name);
    const other = Object.values(statementsFor('"app"."idempotency_keys"')).map((statement) => statement.name);
    expect(again).toEqual(defaults);
    expect(new Set([...defaults, ...other]).size).toBe(defaults.length * 2);
    for (const name of [...defaults, ...other]) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63);
  });
});
