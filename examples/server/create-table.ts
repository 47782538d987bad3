/** Makes the DynamoDB table of `dynamodb.ts`, for a first try or a test account: `npx tsx server/create-table.ts`. */
// #region create-table
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createTable } from "@idemkit/dynamodb";

await createTable(new DynamoDBClient({}), process.env.IDEMPOTENCY_TABLE ?? "idempotency");
// #endregion create-table
