/**
 * `npm run pooler:soak`: the lease-mode duplicate storm of issue 51 (item 10) through PgBouncer in transaction
 * mode (Debian's 1.18, pool of 5), run POOLER_SOAK_RUNS times (default 50), each in a fresh process, counting the
 * runs in which a call never answered: PgBouncer before 1.21 drops the answer to a statement postgres.js pipelines
 * behind another outside a transaction (see docs/deploying.md), about 1 run in 4 on postgres.js's defaults.
 * POOLER_SOAK_MAX_PIPELINE sets postgres.js's `max_pipeline`, POOLER_SOAK_DRIVER=postgres4 runs on postgres.js 4. Exits 1 when any run hung. Not part of `npm test`:
 * it takes a few minutes.
 */
import { createDatabase, MIGRATIONS_FOLDER, spawnScript, startPgbouncer, startPostgres } from "@idemkit/testkit";
import { drizzle } from "drizzle-orm/postgres-js";
import { migrate } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";

const runs = Number(process.env.POOLER_SOAK_RUNS ?? 50);
const callMs = Number(process.env.POOLER_SOAK_CALL_MS ?? 10_000);

const server = await startPostgres();
const bouncer = await startPgbouncer(server.url, { poolSize: 5 });
const database = await createDatabase(server.url, "soak");
const admin = postgres(database.url, { max: 1, onnotice: () => {} });
await migrate(drizzle({ client: admin }), { migrationsFolder: MIGRATIONS_FOLDER });
await admin.unsafe("create table soak_orders (id serial primary key, key text not null)");
await admin.end();

const hung: number[] = [];
const totals: Record<string, number> = {};
try {
  for (let run = 1; run <= runs; run++) {
    const child = spawnScript(new URL("./pooler-soak-run.ts", import.meta.url), {
      POOLED_URL: bouncer.pooled(database.url),
      POOLER_SOAK_CALL_MS: String(callMs),
    });
    // A child that hangs before it reports anything (its pools) is bounded too: by all its rounds' calls and a margin.
    let timer: NodeJS.Timeout | undefined;
    const unanswered = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(JSON.stringify({ hung: true, counts: { "no report": 1 } })), 60_000 + callMs);
    });
    const report = JSON.parse(await Promise.race([child.next("RESULT"), unanswered])) as {
      hung: boolean;
      counts: Record<string, number>;
    };
    clearTimeout(timer);
    await child.kill();
    if (report.hung) hung.push(run);
    for (const [outcome, count] of Object.entries(report.counts)) totals[outcome] = (totals[outcome] ?? 0) + count;
    console.log(`run ${run}/${runs}: ${report.hung ? "HUNG" : "ok"} ${JSON.stringify(report.counts)}`);
  }
} finally {
  await bouncer.stop();
  await database.drop();
  await server.stop();
}
console.log(
  `\n${hung.length} of ${runs} runs hung${hung.length ? ` (runs ${hung.join(", ")})` : ""}; calls: ${JSON.stringify(totals)}`,
);
if (hung.length) process.exitCode = 1;
