/**
 * processOnce on postgres.js 3 with its defaults (`prepare` on) on a direct connection, where the app itself drops
 * the prepared statements (`DISCARD ALL`): postgres.js then reports done a COMMIT that PostgreSQL rolled back. An
 * event is acknowledged as processed only where its handler's writes were kept.
 */
import { openPostgres } from "@idemkit/testkit";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { processOnce } from "../src/index.js";

// One connection, so that the app's DISCARD ALL (sent through `query`, on the same pool) drops what it prepared.
let database: Awaited<ReturnType<typeof openPostgres>>;
beforeAll(async () => {
  database = await openPostgres(inject("postgresUrl"), { max: 1 });
  await database.query("create table sent (event_id text not null)");
});
afterAll(() => database?.close());

describe("processOnce after an app's own DISCARD ALL", () => {
  it("acknowledges an event as processed only when its handler's writes were kept", async () => {
    const { db } = database;
    const deliver = (eventId: string) =>
      processOnce({ db, consumer: "mailer", eventId }, async (tx) => {
        await tx.execute(sql`insert into sent (event_id) values (${eventId})`);
      }).then(
        ({ processed }) => (processed ? "processed" : "skipped"),
        () => "failed",
      );
    expect(await deliver("before")).toBe("processed");
    await database.query("discard all");
    const events = ["after-1", "after-2", "after-3", "after-4", "after-5", "after-6"];
    const outcomes: string[] = [];
    for (const eventId of events) outcomes.push(await deliver(eventId));
    // Delivered once each: a failure is redelivered by the queue, so it must have kept nothing.
    expect(outcomes).not.toContain("skipped");
    expect(outcomes.slice(-3)).toEqual(["processed", "processed", "processed"]);
    const sent = await database.query<{ event_id: string }>("select event_id from sent order by event_id");
    const processed = ["before", ...events.filter((_, index) => outcomes[index] === "processed")];
    expect(sent.map((row) => row.event_id)).toEqual(processed.sort());
    // And its mark with it: a redelivery of a processed event is skipped, of a failed one processed.
    for (const [index, eventId] of events.entries()) {
      expect(await deliver(eventId)).toBe(outcomes[index] === "processed" ? "skipped" : "processed");
    }
  });
});
