/**
 * `idemkit-dynamodb` with each request bounded at 300 ms instead of 10 s, so that a test meets the bound without
 * waiting out the real one.
 */
import { runDynamoCommand } from "../src/inspect-command.js";

await runDynamoCommand({ requestTimeoutMs: 300 });
