/**
 * How the Server Action hook sends a submission again, apart from React: a form that goes while its submission waits
 * to be sent again ends with what came back last, and nothing that ends an attempt otherwise (a navigation) is lost.
 */
import { redirect } from "next/navigation.js";
import { expect, it } from "vitest";
import { sentWithRetries } from "../src/client/submission.js";
import type { ActionRefusal } from "../src/form-contract.js";

const policy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1, maxElapsedMs: 120_000 };

it("ends with the last refusal when the form goes while its submission waits to be sent again", async () => {
  const stillRunning: ActionRefusal = {
    idempotencyError: { code: "IN_PROGRESS", message: "still running", retryable: true, retryAfterMs: 60_000 },
  };
  const gone = new AbortController();
  let sent = 0;
  const ended = await sentWithRetries(
    async () => {
      sent++;
      // The form goes during the minute the refusal asks it to wait.
      setTimeout(() => gone.abort(), 0);
      return stillRunning;
    },
    policy,
    gone.signal,
  );
  expect([ended, sent]).toEqual([stillRunning, 1]);
});

it("throws on a navigation that ends an attempt, even once the form is gone", async () => {
  let navigation: unknown;
  try {
    redirect("/orders/1");
  } catch (error) {
    navigation = error;
  }
  const gone = new AbortController();
  let sent = 0;
  const sending = sentWithRetries(
    async () => {
      sent++;
      if (sent === 1) throw new TypeError("Failed to fetch");
      gone.abort();
      throw navigation;
    },
    policy,
    gone.signal,
  );
  await expect(sending).rejects.toBe(navigation);
  expect(sent).toBe(2);
});
