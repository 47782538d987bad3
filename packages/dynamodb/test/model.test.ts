import { IdempotencyMode } from "@idemkit/core";
import { describeContractModel } from "@idemkit/testkit";
import { dynamoStore } from "../src/index.js";
import { dynamoForThisFile, freshTable } from "./tables.js";

const dynamo = dynamoForThisFile();

describeContractModel("dynamoStore", {
  modes: [IdempotencyMode.LEASE],
  open: async () => ({ store: dynamoStore({ client: dynamo.client, tableName: await freshTable(dynamo.client) }) }),
});
