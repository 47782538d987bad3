/**
 * Which errors of a protected procedure are stored and replayed to every retry, and which release the key so a
 * retry runs the procedure again: core's one classification by status (`isStoredStatus`), and two cases only the
 * middleware can see, an input that never reached the procedure and an input that could not be read.
 */
import { isStoredStatus } from "@idemkit/core/internal";
import { StandardSchemaV1Error, type TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";

export interface StorablePolicy {
  /** False when the input could not be read, so the failure may be the body's transport, not the request. */
  inputUsable: boolean;
  /** Store 5xx and unknown errors too (the `storeServerErrors` option). */
  storeServerErrors: boolean;
}

/** The HTTP status to store the error with, or undefined to release the key instead. */
export function storableStatus(
  error: TRPCError,
  { inputUsable, storeServerErrors }: StorablePolicy,
): number | undefined {
  const status = getHTTPStatusCodeFromError(error);
  const storable = inputUsable && !isInputValidationError(error) && isStoredStatus(status, { storeServerErrors });
  return storable ? status : undefined;
}

/** A failure of the procedure's input parser: the call never started, so nothing is stored. */
function isInputValidationError(error: TRPCError): boolean {
  const { cause } = error;
  return (
    error.code === "BAD_REQUEST" &&
    (cause instanceof StandardSchemaV1Error ||
      (typeof cause === "object" && cause !== null && Array.isArray((cause as { issues?: unknown }).issues)))
  );
}
