/**
 * The table: `createTable` as a setup script runs it (again, or over a table keyed otherwise), and the guide's
 * samples for CloudFormation and Terraform saying what `tableDefinition` and the store say: the partition key, its
 * type, the billing and the Time to Live attribute (there is no AWS account here to deploy them to).
 */
import { readFileSync } from "node:fs";
import { CreateTableCommand, DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import { expect, it } from "vitest";
import { createTable, dynamoStore, tableDefinition } from "../src/index.js";
import { TTL_ATTRIBUTE } from "../src/items.js";
import { dynamoForThisFile } from "./tables.js";

const dynamo = dynamoForThisFile();

it("finds the table made when a setup script runs again, and its records still there", async () => {
  const store = dynamoStore(dynamo);
  const id = { scope: "alice", path: "orders.place", key: "k" };
  await store.claim({ id, fingerprint: "fp", now: 1, leaseExpiresAt: 2, expiresAt: 3_600_000 });
  await createTable(dynamo.client, dynamo.tableName, { timeToLive: false });
  const { Table } = await dynamo.client.send(new DescribeTableCommand({ TableName: dynamo.tableName }));
  expect(Table?.TableStatus).toBe("ACTIVE");
  expect(await store.get(id)).toMatchObject({ state: "in_progress", fingerprint: "fp" });
});

// dynalite has no Time to Live: what an app meets on such an emulator.
it.skipIf(Boolean(process.env.DYNAMODB_ENDPOINT))(
  "says how to make the table on an emulator without Time to Live, having made it",
  async () => {
    const tableName = `${dynamo.tableName}-without-ttl`;
    await expect(createTable(dynamo.client, tableName)).rejects.toThrow(
      `createTable: the table ${tableName} is made, but this endpoint has no Time to Live (an emulator such as dynalite): pass { timeToLive: false } to createTable there.`,
    );
    await createTable(dynamo.client, tableName, { timeToLive: false });
  },
);

it("refuses a table of that name keyed otherwise, naming its keys", async () => {
  const tableName = `${dynamo.tableName}-keyed-otherwise`;
  await dynamo.client.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
      KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
      BillingMode: "PAY_PER_REQUEST",
    }),
  );
  await expect(createTable(dynamo.client, tableName, { timeToLive: false })).rejects.toThrow(
    `createTable: the table ${tableName} exists, keyed by id HASH; the store needs its partition key pk alone.`,
  );
});

const guide = readFileSync(new URL("../../../docs/stores.md", import.meta.url), "utf8");
const block = (lang: string) => guide.match(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``))?.[1] ?? "";
const definition = tableDefinition("idempotency");
const [key] = definition.KeySchema ?? [];
const [attribute] = definition.AttributeDefinitions ?? [];

it("defines the table in CloudFormation as tableDefinition does, TTL on the store's attribute", () => {
  const yaml = block("yaml");
  for (const line of [
    `BillingMode: ${definition.BillingMode}`,
    `- AttributeName: ${attribute?.AttributeName}\n        AttributeType: ${attribute?.AttributeType}`,
    `- AttributeName: ${key?.AttributeName}\n        KeyType: ${key?.KeyType}`,
    `TimeToLiveSpecification:\n      AttributeName: ${TTL_ATTRIBUTE}\n      Enabled: true`,
  ]) {
    expect(yaml).toContain(line);
  }
});

it("defines the same table in Terraform", () => {
  const hcl = block("hcl").replace(/\s+/g, " ");
  expect(hcl).toContain(`billing_mode = "${definition.BillingMode}"`);
  expect(hcl).toContain(`hash_key = "${key?.AttributeName}"`);
  expect(hcl).toContain(`attribute { name = "${attribute?.AttributeName}" type = "${attribute?.AttributeType}" }`);
  expect(hcl).toContain(`ttl { attribute_name = "${TTL_ATTRIBUTE}" enabled = true }`);
  expect(hcl).not.toContain("range_key");
});
