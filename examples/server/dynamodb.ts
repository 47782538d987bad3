/**
 * Lease mode on DynamoDB, for an app on AWS (Lambda, say) whose effects leave the database: its keys are kept in a
 * DynamoDB table, claimed before the procedure runs and completed after it.
 */
// #region dynamodb
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { dynamoStore } from "@idemkit/dynamodb";
import { idempotency } from "@idemkit/trpc";
import superjson from "superjson";
import { env } from "./env";
import { authedProcedure, scope } from "./trpc";

// Region and credentials from the environment, as on Lambda. Two attempts of 1.5 s at most: all of them end inside
// the engine's storeTimeoutMs (5 s), so no claim lands after the call was answered 503, "not run". Without
// throwOnRequestTimeout the SDK only logs a warning at requestTimeout and goes on waiting.
const client = new DynamoDBClient({
  maxAttempts: 2,
  requestHandler: { connectionTimeout: 500, requestTimeout: 1_500, throwOnRequestTimeout: true },
});

export const awsProcedure = authedProcedure.use(
  idempotency({
    store: dynamoStore({ client, tableName: env.idempotencyTable }),
    scope,
    mode: "lease",
    transformer: superjson,
  }),
);
// #endregion dynamodb
