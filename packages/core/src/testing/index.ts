/**
 * The store and atomic-mode conformance suites a store runs in its own tests, and `fireDuplicates` for an app's.
 *
 * @module @idemkit/core/testing
 */
export type { AtomicConformanceOptions, AtomicConformanceSubject } from "./atomic-conformance.js";
export { describeAtomicConformance } from "./atomic-conformance.js";
export type { ConformanceSubject } from "./conformance.js";
export { describeStoreConformance } from "./conformance.js";
export type { DuplicateAnswer, DuplicateReport, DuplicateTarget, FireDuplicatesOptions } from "./duplicates.js";
export { fireDuplicates } from "./duplicates.js";
