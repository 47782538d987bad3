/**
 * One run of `npm run pooler:soak`, in a process of its own (the hang depends on each process's connection
 * timing): lease mode on two postgres.js pools of 5 with `prepare: false`, through the PgBouncer at POOLED_URL.
 * POOLER_SOAK_DRIVER=postgres4 runs it on postgres.js 4. Twenty keys one after another, each replayed from the other
 * pool; then POOLER_SOAK_ROUNDS rounds of 20
 * concurrent duplicates of one key, whose work is an insert on the app's own `db`. Prints `RESULT <json>`: how
 * the calls were answered, and whether a call outlasted POOLER_SOAK_CALL_MS.
 */
import { createIdempotencyEngine, isIdempotencyError } from "@idemkit/core";
import { pgTable, serial, text } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import postgres4 from "postgres4";
import { drizzleStore } from "../src/index.js";

const url = process.env.POOLED_URL as string;
const rounds = Number(process.env.POOLER_SOAK_ROUNDS ?? 5);
const callMs = Number(process.env.POOLER_SOAK_CALL_MS ?? 10_000);
// postgres.js's own default, 100: a statement is pipelined behind another on a busy connection.
const maxPipeline = Number(process.env.POOLER_SOAK_MAX_PIPELINE ?? 100);
// postgres.js 3 (what create-t3-app installs) or 4 ("postgres4"), whose max_pipeline: 1 avoids the hang.
const connect = (process.env.POOLER_SOAK_DRIVER === "postgres4" ? postgres4 : postgres) as typeof postgres;

const orders = pgTable("soak_orders", { id: serial("id").primaryKey(), key: text("key").notNull() });
const apps = [0, 1].map(() => {
  // max_pipeline is a postgres.js 3 option its types leave out.
  const client = connect(url, {
    max: 5,
    prepare: false,
    onnotice: () => {},
    ...({ max_pipeline: maxPipeline } as object),
  });
  const db = drizzle({ client });
  return { client, db, engine: createIdempotencyEngine({ store: drizzleStore({ db }), mode: "lease" }) };
});

/** An order under `key`, placed by `app`'s own database. */
async function placeOrder(app: (typeof apps)[number], key: string) {
  const [row] = await app.db.insert(orders).values({ key }).returning({ id: orders.id });
  return { value: row?.id, response: { status: 200, body: "{}" } };
}

/** How a call was answered, or "hung" when it was not within `callMs`. */
function outcomeOf(call: Promise<unknown>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve("hung"), callMs);
  });
  const answered = call.then(
    () => "answered",
    (error: unknown) => (isIdempotencyError(error) ? error.code : String(error)),
  );
  return Promise.race([answered, hung]).finally(() => clearTimeout(timer));
}

const counts: Record<string, number> = {};
const request = (key: string) => ({ scope: "soak", path: "orders.place", key, fingerprint: "fp" });
for (let index = 0; index < 20; index++) {
  const key = crypto.randomUUID();
  const app = apps[index % 2] as (typeof apps)[number];
  const other = apps[(index + 1) % 2] as (typeof apps)[number];
  const first = await outcomeOf(app.engine.run(request(key), () => placeOrder(app, key)));
  counts[first] = (counts[first] ?? 0) + 1;
  const replay = await outcomeOf(other.engine.run(request(key), () => Promise.reject(new Error("replay ran"))));
  counts[replay] = (counts[replay] ?? 0) + 1;
}
for (let round = 0; round < rounds && !counts.hung; round++) {
  const key = crypto.randomUUID();
  const outcomes = await Promise.all(
    Array.from({ length: 20 }, (_, index) => {
      const app = apps[index % 2] as (typeof apps)[number];
      return outcomeOf(app.engine.run(request(key), () => placeOrder(app, key)));
    }),
  );
  for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1;
}
console.log(`RESULT ${JSON.stringify({ hung: (counts.hung ?? 0) > 0, counts })}`);
// A hung statement never settles: the pools are not waited for.
process.exit(0);
