export type {
  DuplicateAnswer,
  DuplicateReport,
  DuplicateTarget,
  FireDuplicatesOptions,
} from "./duplicates.js";
export { fireDuplicates } from "./duplicates.js";
