/**
 * Fault switches for tests and demos: make the next order of one user fail after its writes but before commit,
 * or take longer. Armed per user (the `uid` cookie) so parallel tests never trip each other, kept in process
 * memory (the demo runs one process), and inert unless IDEMKIT_FAULTS=1: a production build without that
 * variable has no way to reach them.
 */
import { TRPCError } from "@trpc/server";
import { env } from "./env";

export interface FaultPlan {
  /** How many of the user's next orders fail after their writes, before commit (a 500; the retry runs again). */
  failBeforeCommit?: number;
  /** How long each of the user's orders waits after its writes, in ms, before returning. */
  slowMs?: number;
}

const plans = new Map<string, Required<FaultPlan>>();
/** Request bodies the handler is reading now: for a test to act while one is held, not after a guessed while. */
let bodiesBeingRead = 0;

export const faultsEnabled = env.faults;

/** Arms (or, with an empty plan, clears) the faults for `userId`. */
export function armFaults(userId: string, plan: FaultPlan): void {
  if (!faultsEnabled) return;
  plans.set(userId, { failBeforeCommit: plan.failBeforeCommit ?? 0, slowMs: plan.slowMs ?? 0 });
}

/** What a test can see of the process: how many request bodies are being read now. */
export function faultState(): { bodiesBeingRead: number } {
  return { bodiesBeingRead };
}

/** Counts `reading`, a request body being read, while it lasts; only with faults on. */
export async function countedWhileReading<T>(reading: Promise<T>): Promise<T> {
  if (!faultsEnabled) return reading;
  bodiesBeingRead++;
  try {
    return await reading;
  } finally {
    bodiesBeingRead--;
  }
}

/** Called by placeOrder after its writes: waits and/or fails as armed; does nothing when faults are off. */
export async function beforeCommit(userId: string): Promise<void> {
  const plan = faultsEnabled ? plans.get(userId) : undefined;
  if (!plan) return;
  if (plan.slowMs > 0) await new Promise((done) => setTimeout(done, plan.slowMs));
  if (plan.failBeforeCommit > 0) {
    plan.failBeforeCommit--;
    throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: "Injected fault: failed before commit." });
  }
}
