/**
 * What idemkit's commands share: running one (`command-line.ts`), and what the key-value stores' inspecting commands
 * print of a record (`records.ts`).
 *
 * @module @idemkit/command-line
 */
export type { CommandArgs, CommandLine, CommandOptions, CommandRun, InspectReport } from "./command-line.js";
export { missingDriver, runCommandLine, wrongCount } from "./command-line.js";
export type { RecordView } from "./records.js";
export {
  hasEnoughListed,
  listReport,
  RECORD_OPTIONS,
  recordArgsProblem,
  recordLines,
  recordView,
  showReport,
  statsReport,
} from "./records.js";
