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

// Region and credentials from the environment, as on Lambda; each request bounded, well inside storeTimeoutMs.
const client = new DynamoDBClient({ requestHandler: { connectionTimeout: 1_000, requestTimeout: 2_000 } });

export const awsProcedure = authedProcedure.use(
  idempotency({
    store: dynamoStore({ client, tableName: env.idempotencyTable }),
    scope,
    mode: "lease",
    transformer: superjson,
  }),
);
// #endregion dynamodb
