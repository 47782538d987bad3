"use client";
/**
 * The express checkout's form: one button. A refusal's message is shown under it, and `ActionKeyField` carries
 * what the refusal keeps: the payment's key, and after a payment that ran unrecorded, the field that makes the next
 * press a check of how it ended rather than a second payment.
 */
import { ActionKeyField, isActionRefusal, useIdempotentActionState } from "@idemkit/next/client";
import type { ReactNode } from "react";
import { payNowAction } from "./pay-now";

export function ExpressForm({ keyField }: { keyField: ReactNode }) {
  const [state, formAction, pending] = useIdempotentActionState(
    payNowAction,
    {},
    {
      storageKey: "idemkit:actions.payNow",
    },
  );
  return (
    <form action={formAction} aria-label="Express checkout" aria-busy={pending}>
      <ActionKeyField state={state}>{keyField}</ActionKeyField>
      <p>Gooseneck kettle, paid by card at once.</p>
      <button type="submit">Pay now</button>
      {isActionRefusal(state) ? <p role="alert">{state.idempotencyError.message}</p> : null}
    </form>
  );
}
