/**
 * Which errors of a protected procedure are stored and replayed to every retry, and which release the key so a
 * retry runs the procedure again. A client error is the request's own fault and would fail again, so it is kept;
 * a server error, a transient refusal, or an input that never reached the procedure is not.
 */
import { StandardSchemaV1Error, type TRPC_ERROR_CODE_KEY, type TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";

/**
 * 4xx answers that mean "try again later" rather than "this request is wrong": storing them would replay a
 * transient refusal for the whole TTL.
 */
const TRANSIENT_CLIENT_ERRORS = new Set<TRPC_ERROR_CODE_KEY>([
  "TIMEOUT",
  "CONFLICT",
  "TOO_MANY_REQUESTS",
  "CLIENT_CLOSED_REQUEST",
  "PRECONDITION_FAILED",
]);

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
  const storable =
    inputUsable &&
    ((status < 500 && !TRANSIENT_CLIENT_ERRORS.has(error.code) && !isInputValidationError(error)) ||
      (status >= 500 && storeServerErrors));
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
