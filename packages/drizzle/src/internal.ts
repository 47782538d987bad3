/**
 * What idemkit's own packages built on this one share (`@idemkit/outbox`): how a fixed statement is run, named and
 * purged, how a transaction is begun safely, and how drivers' errors are read; and the store's own statements, which
 * the benchmark runs by hand to tell their cost from the engine's. Apps should not import it: names and signatures
 * here may change in any release.
 */

export { commitKept, provingCommit } from "./commit-proof.js";
export type { Executor, Row } from "./database.js";
export { driverOf, rowsOfResult } from "./driver.js";
export { isLockTimeout, sqlStateOf } from "./driver-errors.js";
export { type Args, type InspectReport, runInspectCommand, type SqlClient } from "./inspect-command.js";
export { registerDatabase } from "./prepared-queries.js";
export { type Age, type PurgeCommand, runPurgeCommand } from "./purge-command.js";
export { claimSavepoint, statementsFor } from "./record-statements.js";
export { named, qualifiedName, type Statement } from "./statement-text.js";
export {
  command,
  dispatch,
  purgeInBatches,
  run,
  runUnprepared,
} from "./statements.js";
export { StatementLostBeforeWork, transactionOf } from "./transaction.js";
