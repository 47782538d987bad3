/**
 * `idemkit-dynamodb`, as an operator runs it: a separate process, DYNAMODB_TABLE and the AWS SDK's environment,
 * exit codes a script reads.
 */
import { execFile } from "node:child_process";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { CreateTableCommand } from "@aws-sdk/client-dynamodb";
import { encryptedStore } from "@idemkit/core";
import { expectUnreachable, expectUsageError } from "@idemkit/testkit";
import { beforeAll, describe, expect, it } from "vitest";
import { dynamoStore } from "../src/index.js";
import { dynamoForThisFile } from "./tables.js";

const dynamo = dynamoForThisFile();
const now = Date.now();
const at = (key: string) => ({ scope: "alice", path: "checkout.placeOrder", key });

beforeAll(async () => {
  const store = dynamoStore(dynamo);
  /** Claims `key` at `claimedAt` (now unless said), its lease `leaseMs` long; the fence it got. */
  const fenceOf = async (key: string, leaseMs: number, on = store, claimedAt = now) => {
    const claimed = await on.claim({
      id: at(key),
      fingerprint: `fp-${key}`,
      now: claimedAt,
      leaseExpiresAt: claimedAt + leaseMs,
      expiresAt: claimedAt + 3_600_000,
    });
    if (claimed.status !== "claimed") throw new Error(`${key} was not claimed`);
    return claimed.fence;
  };
  const later = now + 3_600_000;
  await store.complete(at("done"), await fenceOf("done", 60_000), { status: 201, body: '{"orderId":7}' }, later);
  await fenceOf("running", 60_000);
  await fenceOf("stuck", -1_000);
  await store.release(at("released"), await fenceOf("released", 60_000));
  await store.complete(at("large"), await fenceOf("large", 60_000), { status: 200, body: "x".repeat(900_000) }, later);
  // Past its end, which DynamoDB's Time to Live may take days to delete: counted nowhere.
  const ended = now - 7_200_000;
  await store.complete(at("ended"), await fenceOf("ended", 30_000, store, ended), { status: 200, body: "{}" }, ended);
  const sealed = encryptedStore(store, { current: "k", keys: { k: new Uint8Array(32).fill(1) } });
  await sealed.complete(
    at("secret"),
    await fenceOf("secret", 60_000, sealed),
    { status: 200, body: '{"card":"4242"}' },
    later,
  );
});

const CLI = fileURLToPath(new URL("../src/inspect-cli.ts", import.meta.url));
/** The same command with its requests bounded at 300 ms. */
const BOUNDED_CLI = fileURLToPath(new URL("./bounded-cli.ts", import.meta.url));
async function idemkitDynamo(args: string[], env: Record<string, string> = {}, script = CLI) {
  const run = promisify(execFile)(
    process.execPath,
    ["--conditions=@idemkit/source", "--import", "tsx", script, ...args],
    {
      // A command that hangs is killed, and fails the test on its exit code.
      timeout: 20_000,
      env: {
        ...process.env,
        DYNAMODB_TABLE: dynamo.tableName,
        AWS_ENDPOINT_URL_DYNAMODB: dynamo.server.endpoint,
        AWS_REGION: "us-east-1",
        AWS_ACCESS_KEY_ID: "idemkit",
        AWS_SECRET_ACCESS_KEY: "idemkit",
        // Run as an operator runs it: without the SDK's switch that the tests' own clients set (tables.ts).
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: undefined,
        ...env,
      },
    },
  );
  return run.then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );
}
const on = ["--scope", "alice", "--path", "checkout.placeOrder"];

describe("idemkit-dynamodb", () => {
  it("shows a key's record, and its answer only when asked (stored in parts, or sealed, said as it is)", async () => {
    const shown = await idemkitDynamo(["show", "done", ...on, "--json"]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual({
      partitionKey: expect.stringMatching(/^[0-9a-f]{64}$/),
      state: "completed",
      fence: expect.any(Number),
      fingerprint: "fp-done",
      status: 201,
      leaseLeftS: null,
      expiresInS: expect.any(Number),
    });
    expect(JSON.parse((await idemkitDynamo(["show", "done", ...on, "--body", "--json"])).stdout).body).toBe(
      '{"orderId":7}',
    );
    expect(JSON.parse((await idemkitDynamo(["show", "large", ...on, "--body", "--json"])).stdout).body).toHaveLength(
      900_000,
    );
    expect(JSON.parse((await idemkitDynamo(["show", "secret", ...on, "--body", "--json"])).stdout).body).toBe(
      "(sealed by encryptedStore)",
    );
    for (const key of ["nothing", "released"]) {
      const missing = await idemkitDynamo(["show", key, ...on]);
      expect([missing.code, missing.stdout.trim()]).toEqual([3, `no record of key ${key} on checkout.placeOrder`]);
    }
  });

  it("lists the records in progress, the stuck ones alone with --stuck, and counts them all", async () => {
    expect(JSON.parse((await idemkitDynamo(["list", "--json"])).stdout)).toHaveLength(2);
    const stuck = JSON.parse((await idemkitDynamo(["list", "--stuck", "--json"])).stdout);
    expect(stuck.map((record: { fingerprint: string }) => record.fingerprint)).toEqual(["fp-stuck"]);
    expect(JSON.parse((await idemkitDynamo(["stats", "--json"])).stdout)).toEqual({
      succeeded: 3,
      refused4xx: 0,
      failed5xx: 0,
      running: 1,
      stuck: 1,
    });
    expect((await idemkitDynamo(["stats"])).stdout).toContain(
      "succeeded 3  refused4xx 0  failed5xx 0  running 1  stuck 1",
    );
  });

  it("prints its own output alone: no warning of the AWS SDK's about this Node.js version", async () => {
    const counted = await idemkitDynamo(["stats"]);
    expect(counted).toEqual({ code: 0, stdout: expect.any(String), stderr: "" });
    expect(counted.stdout.split("\n")).toEqual([
      expect.stringMatching(/^records the table holds /),
      "succeeded 3  refused4xx 0  failed5xx 0  running 1  stuck 1",
      "",
    ]);
  });

  it("says in one line, without a stack, that it cannot reach DynamoDB, find the table or use it as keyed: exit 1", async () => {
    const away = await idemkitDynamo(["stats"], { AWS_ENDPOINT_URL_DYNAMODB: "http://127.0.0.1:1" });
    expectUnreachable(away, /^idemkit-dynamodb: cannot reach DynamoDB/);
    // `show --body` reads through the store, which refuses such a table as misconfigured: said the same way.
    for (const args of [["stats"], ["show", "done", ...on, "--body"]]) {
      const noTable = await idemkitDynamo(args, { DYNAMODB_TABLE: "no-such-table" });
      expect([noTable.code, noTable.stderr.trim()]).toEqual([
        1,
        expect.stringMatching(/^idemkit-dynamodb: no table named by DYNAMODB_TABLE/),
      ]);
    }
    const keyedById = `${dynamo.tableName}-keyed-by-id`;
    await dynamo.client.send(
      new CreateTableCommand({
        TableName: keyedById,
        AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
    for (const args of [
      ["show", "done", ...on],
      ["show", "done", ...on, "--body"],
    ]) {
      const otherKey = await idemkitDynamo(args, { DYNAMODB_TABLE: keyedById });
      expect([otherKey.code, otherKey.stderr.trim()]).toEqual([
        1,
        expect.stringMatching(/^idemkit-dynamodb: the table named by DYNAMODB_TABLE is keyed otherwise; .* pk alone/),
      ]);
    }
  });

  it("gives up on a DynamoDB that takes the connection and never answers: exit 1, one line", async () => {
    const held: Socket[] = [];
    const silent = createServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const endpoint = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      for (const args of [["stats"], ["list"], ["show", "done", ...on]]) {
        const hung = await idemkitDynamo(args, { AWS_ENDPOINT_URL_DYNAMODB: endpoint }, BOUNDED_CLI);
        expectUnreachable(hung, /^idemkit-dynamodb: DynamoDB did not answer within 0\.3 s$/);
      }
      expect(held).toHaveLength(3);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("refuses a show without its scope, an unknown option, no command and no table: exit 2, one line and the usage", async () => {
    const refusals = [
      [["show", "done"], {}, "show takes one key, with its --scope and --path"],
      [["stats", "--bogus"], {}, "Unknown option '--bogus'"],
      [[], {}, "a command is needed: show, list, stats"],
      [["stats"], { DYNAMODB_TABLE: "" }, "DYNAMODB_TABLE is not set"],
    ] as const;
    for (const [args, env, said] of refusals) {
      expectUsageError(await idemkitDynamo([...args], env), expect.stringContaining(`idemkit-dynamodb: ${said}`));
    }
  });
});
