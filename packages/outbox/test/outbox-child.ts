/**
 * A relay or a consumer in a process of its own, for the outbox crash tests. It stops at the moment under test,
 * prints `HOLDING <event key>` and waits there for ever, so the test can kill it with SIGKILL:
 * - ROLE=relay: just after publishing an event (the broker, the `deliveries` table, has it) and before marking it;
 * - ROLE=consumer: inside processOnce for EVENT_ID, after its handler wrote to `sent` and before the commit.
 */
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { createRelay, processOnce } from "../src/index.js";

const client = postgres(String(process.env.DATABASE_URL), { max: 2, onnotice: () => {} });
const db = drizzle(client);
const forever = new Promise<never>(() => {});

if (process.env.ROLE === "relay") {
  const relay = createRelay({
    db,
    publish: async (event) => {
      await db.execute(sql`insert into deliveries (event_key) values (${event.key})`);
      console.log(`HOLDING ${event.key}`);
      await forever;
    },
  });
  await relay.runOnce();
} else {
  const eventId = String(process.env.EVENT_ID);
  await processOnce({ db, consumer: "mailer", eventId }, async (tx) => {
    await tx.execute(sql`insert into sent (event_key) values (${eventId})`);
    console.log(`HOLDING ${eventId}`);
    await forever;
  });
}
