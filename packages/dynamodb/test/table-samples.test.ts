/**
 * The guide's table samples for CloudFormation and Terraform say what `tableDefinition` and the store say: the
 * partition key, its type, the billing and the Time to Live attribute. No AWS account here to deploy them to.
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { tableDefinition } from "../src/index.js";
import { TTL_ATTRIBUTE } from "../src/items.js";

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
