#!/usr/bin/env node
/** The `idemkit-dynamodb` command, as npm installs it: `inspect-command.ts` says what it does. */
import { runDynamoCommand } from "./inspect-command.js";

await runDynamoCommand();
