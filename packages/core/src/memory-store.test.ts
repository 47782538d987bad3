import { memoryStore } from "./memory-store.js";
import { describeStoreConformance } from "./testing/conformance.js";

describeStoreConformance("memoryStore", async () => ({ store: memoryStore() }));
