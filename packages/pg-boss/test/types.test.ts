/**
 * The jobs take the installed pg-boss's own types: its send and work options, and the job its worker hands over,
 * for each end of the peer range. Checked by the type checker; nothing here runs a job.
 */
import type { PostgresJsDatabase } from "drizzle-orm/postgres-js";
import type PgBoss10 from "pg-boss";
import type PgBoss11 from "pg-boss-11";
import type { PgBoss as PgBoss12 } from "pg-boss-12";
import { describe, expectTypeOf, it } from "vitest";
import type { createJobs, IdempotentSendOptions, IdempotentWorkOptions, JobOf } from "../src/index.js";

type Db = PostgresJsDatabase<Record<string, never>>;
type JobsOn<Boss extends PgBoss10 | PgBoss11 | PgBoss12> = ReturnType<typeof createJobs<Db, Boss>>;

describe("the jobs over each end of pg-boss's range", () => {
  it("take any major's boss", () => {
    expectTypeOf<typeof createJobs<Db, PgBoss10>>().parameter(0).toHaveProperty("boss").toEqualTypeOf<PgBoss10>();
    expectTypeOf<typeof createJobs<Db, PgBoss11>>().parameter(0).toHaveProperty("boss").toEqualTypeOf<PgBoss11>();
    expectTypeOf<typeof createJobs<Db, PgBoss12>>().parameter(0).toHaveProperty("boss").toEqualTypeOf<PgBoss12>();
  });

  it("sends with the options of the installed pg-boss, with a key in place of the id", () => {
    expectTypeOf<IdempotentSendOptions<PgBoss12>>().toHaveProperty("group");
    expectTypeOf<IdempotentSendOptions<PgBoss10>>().not.toHaveProperty("group");
    expectTypeOf<IdempotentSendOptions<PgBoss12>>().toHaveProperty("key").toEqualTypeOf<string>();
    expectTypeOf<IdempotentSendOptions<PgBoss12>>().not.toHaveProperty("id");
    expectTypeOf<IdempotentSendOptions<PgBoss10>>().not.toHaveProperty("db");
  });

  it("works with the installed pg-boss's options, less those that would settle the jobs itself", () => {
    expectTypeOf<IdempotentWorkOptions<PgBoss12>>().toHaveProperty("localConcurrency");
    expectTypeOf<IdempotentWorkOptions<PgBoss12>>().not.toHaveProperty("perJobResults");
    expectTypeOf<IdempotentWorkOptions<PgBoss12>>().not.toHaveProperty("transactional");
    expectTypeOf<IdempotentWorkOptions<PgBoss10>>().toHaveProperty("batchSize");
  });

  it("hands the handler the installed pg-boss's job, with its data typed", () => {
    expectTypeOf<JobOf<PgBoss12, { orderId: number }>>().toHaveProperty("signal").toEqualTypeOf<AbortSignal>();
    expectTypeOf<JobOf<PgBoss12, { orderId: number }>>().toHaveProperty("data").toEqualTypeOf<{ orderId: number }>();
    expectTypeOf<JobOf<PgBoss10, { orderId: number }>>().not.toHaveProperty("signal");
    expectTypeOf<Parameters<Parameters<JobsOn<PgBoss12>["work"]>[2]>[0]>().toHaveProperty("retryCount");
  });
});
