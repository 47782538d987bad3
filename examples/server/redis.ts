/**
 * Lease mode on Redis, for procedures whose effects leave the database (a payment provider): their keys are kept
 * in Redis, claimed before the procedure runs and completed after it.
 */
// #region redis
import { redisStore } from "@idemkit/redis";
import { idempotency } from "@idemkit/trpc";
import { createClient } from "redis";
import superjson from "superjson";
import { env } from "./env";
import { authedProcedure, scope } from "./trpc";

const client = await createClient({ url: env.redisUrl, disableOfflineQueue: true }).connect();

export const leaseProcedure = authedProcedure.use(
  idempotency({ store: redisStore({ client }), scope, mode: "lease", transformer: superjson }),
);
// #endregion redis
