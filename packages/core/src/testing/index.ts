export type { ConformanceSubject } from "./conformance.js";
export { describeStoreConformance } from "./conformance.js";
