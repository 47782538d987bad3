/** The contract's model against the engine over the in-memory store, the reference every real store is held to. */
import { IdempotencyMode, memoryStore } from "@idemkit/core";
import { describeContractModel } from "../src/index.js";

describeContractModel("memoryStore", { modes: [IdempotencyMode.LEASE], open: () => ({ store: memoryStore() }) });
