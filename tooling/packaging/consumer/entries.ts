/**
 * Every public entry point, imported as a user would. The `@ts-expect-error` lines fail the type check if an entry's
 * types resolved to `any` (a missing declaration file would let everything through).
 */
import { type createIdempotencyEngine, memoryStore } from "@idemkit/core";
import type { Settlement } from "@idemkit/core/adapter";
import { withIdempotency } from "@idemkit/core/fetch";
import { replacement } from "@idemkit/core/store";
import { CallOutcome } from "@idemkit/core/telemetry";
import type { describeStoreConformance, fireDuplicates } from "@idemkit/core/testing";
import { drizzleStore, type idempotencyKeys } from "@idemkit/drizzle";
import { type createTable, dynamoStore } from "@idemkit/dynamodb";
import { type IdempotencyKeyField, idempotentAction } from "@idemkit/next";
import { createOutbox, type outboxEvents, type processOnce } from "@idemkit/outbox";
import { createJobs, type jobIdFor } from "@idemkit/pg-boss";
import { expectOneKeyPerAction, type watchMutations } from "@idemkit/playwright";
import type { guardedConnections } from "@idemkit/postgres-js-guard";
import type { idempotentMutationDefaults, useIdempotentMutation } from "@idemkit/react";
import type { useIdempotentMutation as useIdempotentClassicMutation } from "@idemkit/react/classic";
import { redisStore } from "@idemkit/redis";
import { idempotency, type withIdempotencyKey } from "@idemkit/trpc";
import { idempotencyContext, idempotencyHeaders, idempotencyLink, idempotencyRetryLink } from "@idemkit/trpc/client";

export type Entries = [
  typeof memoryStore,
  typeof createIdempotencyEngine,
  typeof withIdempotency,
  typeof replacement,
  typeof describeStoreConformance,
  typeof drizzleStore,
  typeof idempotencyKeys,
  typeof guardedConnections,
  typeof IdempotencyKeyField,
  typeof outboxEvents,
  typeof processOnce,
  typeof jobIdFor,
  typeof watchMutations,
  typeof useIdempotentMutation,
  typeof useIdempotentClassicMutation,
  typeof idempotentMutationDefaults,
  typeof withIdempotencyKey,
  typeof idempotencyLink,
  typeof idempotencyRetryLink,
  typeof fireDuplicates,
  typeof createTable,
  typeof CallOutcome,
];

export function misuse(): void {
  // @ts-expect-error scope is required
  idempotency({ store: memoryStore() });
  // @ts-expect-error a replacement is decided over a stored record and a claim
  replacement("record", "request");
  // @ts-expect-error the Fetch adapter's scope reads a Request
  withIdempotency(() => new Response(), { store: memoryStore(), scope: 42 });
  // @ts-expect-error a key is a string
  idempotencyContext({ key: 42 });
  // @ts-expect-error the link needs a url
  idempotencyLink({});
  // @ts-expect-error a retry policy's fields are numbers
  idempotencyRetryLink({ retry: { maxAttempts: "5" } });
  // @ts-expect-error the headers are a terminating link's, given its operation
  idempotencyHeaders({});
  // @ts-expect-error the store needs a database
  drizzleStore({});
  // @ts-expect-error an action needs its name, the action and its options
  idempotentAction(async () => ({}));
  // @ts-expect-error an outbox's clock is a function
  createOutbox({ now: 42 });
  // @ts-expect-error jobs need a pg-boss and a database
  createJobs({});
  // @ts-expect-error the store needs a Redis client
  redisStore({});
  // @ts-expect-error the store needs a DynamoDB client and its table
  dynamoStore({});
  // @ts-expect-error the assertion reads a log of mutations
  expectOneKeyPerAction([]);
  // @ts-expect-error a settlement is the work's value and what is stored of it
  const settled: Settlement<number> = { value: "42" };
  // @ts-expect-error an outcome is one of CallOutcome's
  const outcome: CallOutcome = "maybe";
  void [settled, outcome, CallOutcome.EXECUTED];
}
