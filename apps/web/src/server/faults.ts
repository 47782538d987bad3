/**
 * Fault switches for tests and demos: make the next order of one user fail after its writes but before commit,
 * take longer, commit while the database's answer to its COMMIT is lost on the way, or (lease mode) be placed while
 * the store fails to keep its answer. Armed per user (the `uid`
 * cookie) so parallel tests never trip each other, kept in process memory (the demo runs one process), and inert
 * unless IDEMKIT_FAULTS=1: a production build without that variable has no way to reach them.
 */
import type { IdempotencyStore } from "@idemkit/core";
import { TRPCError } from "@trpc/server";
import { env } from "./env";

export interface FaultPlan {
  /** How many of the user's next orders fail after their writes, before commit (a 500; the retry runs again). */
  failBeforeCommit?: number;
  /** How long each of the user's orders waits after its writes, in ms, before returning. */
  slowMs?: number;
  /**
   * How many of the user's next orders commit, and then have the answer to their COMMIT lost (the connection
   * breaks after it was sent): the order is placed, and the server cannot know it. Answered OUTCOME_UNKNOWN.
   */
  loseCommitAnswer?: number;
  /**
   * How many of the store's next attempts to keep a lease-mode answer of the user's fail, as a database gone for a
   * moment would: past the engine's first three, the call ran and is answered RAN_UNRECORDED, and a later attempt
   * the engine makes while it holds the lease stores it.
   */
  failCompletions?: number;
}

/**
 * The switches and what a test can see, on globalThis: Next.js evaluates this module once per bundle (the route
 * that arms a fault is not the Server Action that trips it), and they must be one.
 */
const shared = globalThis as typeof globalThis & { idemkitFaults?: FaultState };
shared.idemkitFaults ??= { plans: new Map(), bodiesBeingRead: 0, ordersHeld: 0 };
const state = shared.idemkitFaults;

interface FaultState {
  plans: Map<string, Required<FaultPlan>>;
  /** Request bodies the handler is reading now: for a test to act while one is held, not after a guessed while. */
  bodiesBeingRead: number;
  /** Orders held by `slowMs` now, their key claimed: for a test to send a duplicate while one runs. */
  ordersHeld: number;
}
const { plans } = state;

export const faultsEnabled = env.faults;

/** Arms (or, with an empty plan, clears) the faults for `userId`. */
export function armFaults(userId: string, plan: FaultPlan): void {
  if (!faultsEnabled) return;
  plans.set(userId, {
    failBeforeCommit: plan.failBeforeCommit ?? 0,
    slowMs: plan.slowMs ?? 0,
    loseCommitAnswer: plan.loseCommitAnswer ?? 0,
    failCompletions: plan.failCompletions ?? 0,
  });
}

/** What a test can see of the process: how many request bodies are being read, and orders held, now. */
export function faultState(): { bodiesBeingRead: number; ordersHeld: number } {
  return { bodiesBeingRead: state.bodiesBeingRead, ordersHeld: state.ordersHeld };
}

/** Counts `reading`, a request body being read, while it lasts; only with faults on. */
export async function countedWhileReading<T>(reading: Promise<T>): Promise<T> {
  if (!faultsEnabled) return reading;
  state.bodiesBeingRead++;
  try {
    return await reading;
  } finally {
    state.bodiesBeingRead--;
  }
}

/** Called by placeOrder after its writes: waits and/or fails as armed; does nothing when faults are off. */
export async function beforeCommit(userId: string): Promise<void> {
  const plan = faultsEnabled ? plans.get(userId) : undefined;
  if (!plan) return;
  if (plan.slowMs > 0) {
    state.ordersHeld++;
    try {
      await new Promise((done) => setTimeout(done, plan.slowMs));
    } finally {
      state.ordersHeld--;
    }
  }
  if (plan.failBeforeCommit > 0) {
    plan.failBeforeCommit--;
    throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: "Injected fault: failed before commit." });
  }
}

/**
 * `store` with the user's armed faults: its atomic transactions lose the answer to their COMMIT
 * (`loseCommitAnswer`: the transaction commits, and then fails as a broken connection would), and its lease-mode
 * completions fail (`failCompletions`). `store` itself with faults off.
 */
export function withStoreFaults<Tx, S extends IdempotencyStore<Tx>>(store: S): S {
  if (!faultsEnabled) return store;
  const { atomic } = store;
  const armed = (userId: string | undefined) => (userId === undefined ? undefined : plans.get(userId));
  return {
    ...store,
    complete(id, fence, response, expiresAt) {
      const plan = armed(id.scope);
      if (plan && plan.failCompletions > 0) {
        plan.failCompletions--;
        return Promise.reject(new Error("Injected fault: the database failed as the answer was being stored."));
      }
      return store.complete(id, fence, response, expiresAt);
    },
    ...(atomic && {
      atomic: {
        ...atomic,
        async transaction(work) {
          let userId: string | undefined;
          const committed = await atomic.transaction((session) =>
            work({
              ...session,
              claim(request) {
                userId = request.id.scope;
                return session.claim(request);
              },
            }),
          );
          const plan = armed(userId);
          if (plan && plan.loseCommitAnswer > 0) {
            plan.loseCommitAnswer--;
            throw new Error("Injected fault: the connection broke after COMMIT was sent, and its answer was lost.");
          }
          return committed;
        },
      },
    }),
  };
}
