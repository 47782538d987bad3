import { describeStoreConformance } from "@idemkit/core/testing";
import { dynamoStore } from "../src/index.js";
import { dynamoForThisFile } from "./tables.js";

const dynamo = dynamoForThisFile();

describeStoreConformance("dynamoStore on dynalite", async () => ({ store: dynamoStore(dynamo) }));
