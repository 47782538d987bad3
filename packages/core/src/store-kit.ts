/**
 * `@idemkit/core/store`: what a store author writes to: the contract (its face, `IdempotencyStore`, is at
 * `@idemkit/core` too), the modes read from a store's own type, how a record reads as a state, when it may be
 * purged, and when a claim may replace a record that is there. The
 * PostgreSQL and Redis stores are written on it; the conformance suites at `@idemkit/core/testing` check a store.
 *
 * @module @idemkit/core/store
 */
export type {
  AtomicCapability,
  AtomicSession,
  ClaimRequest,
  ClaimResult,
  DefaultModeOf,
  IdempotencyStore,
  LeaseStore,
  ModesOf,
  ModeTransaction,
  RecordId,
  StoredRecord,
  StoredResponse,
} from "./store.js";
export { isPurgeable, RecordState, replacement } from "./store.js";
