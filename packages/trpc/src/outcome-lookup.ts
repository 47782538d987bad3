/**
 * "Did my payment go through?" A query an app mounts once, next to its protected mutations, that answers what
 * became of one action (a procedure and a key) without sending its input again: still running, completed (with the
 * stored result), failed (with the stored error), or unknown (never seen, or expired). A client that lost an answer
 * (a reload, a link that gave up, a tab that was offline) asks it, and either shows the outcome or presses again
 * with the same key, which is safe either way.
 *
 * A record belongs to its scope: the lookup reads only records of the caller's own scope, computed the same way as
 * the middleware's, so nobody reads another user's results by guessing keys.
 */
import { type IdempotencyOutcomeAnswer, type IdempotencyStore, RecordState, type StoredRecord } from "@idemkit/core";
import { parseIdempotencyKey } from "@idemkit/core/internal";
import { TRPCError } from "@trpc/server";
import { type IdempotencyTransformer, outputTransformer, type StoredBody } from "./stored-body.js";

/** Which action to look up: the mutation's path (`checkout.placeOrder`) and the key it was sent with. */
export interface OutcomeLookupInput {
  path: string;
  key: string;
}

export interface OutcomeLookupOptions<TCtx> {
  /** The store the `idempotency` middleware uses. */
  store: IdempotencyStore<unknown>;
  /** The middleware's `scope`: the same function, so a lookup sees only the caller's own records. */
  scope: (opts: { ctx: TCtx }) => string | Promise<string>;
  /** The middleware's `transformer`, so a completed result reads back with its types. */
  transformer?: IdempotencyTransformer;
  /**
   * The procedures that may be looked up (their paths). Default: any. Give them when procedures differ in how they
   * are scoped (one by organisation, one by user): `scope` here is one function, and should answer only for the
   * procedures whose middleware uses the same.
   */
  procedures?: readonly string[];
  /** The clock, in ms since the epoch, to tell expired records; for tests that move time. */
  now?: () => number;
}

/** The longest procedure path the lookup accepts: paths are the router's own names, never user text. */
const MAX_PATH_LENGTH = 256;

/**
 * Validates the lookup's input, for `.input()`: a procedure path and a well-formed key; anything else is a 400
 * that says what is wrong.
 */
export function outcomeLookupInput(input: unknown): OutcomeLookupInput {
  const { path, key } = (typeof input === "object" && input !== null ? input : {}) as Record<string, unknown>;
  if (typeof path !== "string" || path.length === 0 || path.length > MAX_PATH_LENGTH) {
    throw new TRPCError({
      code: "BAD_REQUEST",
      message: `The lookup needs the procedure's path, a string of 1 to ${MAX_PATH_LENGTH} characters.`,
    });
  }
  try {
    return { path, key: parseIdempotencyKey(typeof key === "string" ? key : undefined, path) };
  } catch (cause) {
    throw new TRPCError({
      code: "BAD_REQUEST",
      message: "The lookup needs the key the action was sent with: 1 to 255 visible ASCII characters.",
      cause,
    });
  }
}

/**
 * The resolver of the outcome lookup query. Mount it once, on a procedure with the same authentication as the
 * protected mutations:
 *
 *   idempotencyOutcome: authedProcedure.input(outcomeLookupInput).query(outcomeLookup({ store, scope, transformer }))
 */
export function outcomeLookup<TCtx>({
  store,
  scope: scopeOf,
  transformer,
  procedures,
  now = Date.now,
}: OutcomeLookupOptions<TCtx>) {
  const output = outputTransformer(transformer);
  const allowed = procedures && new Set(procedures);
  return async ({ ctx, input }: { ctx: TCtx; input: OutcomeLookupInput }): Promise<IdempotencyOutcomeAnswer> => {
    if (allowed && !allowed.has(input.path)) {
      throw new TRPCError({ code: "BAD_REQUEST", message: `Outcomes of ${input.path} cannot be looked up here.` });
    }
    const scope = await scopeOf({ ctx });
    if (typeof scope !== "string" || scope.length === 0) {
      throw new TRPCError({
        code: "INTERNAL_SERVER_ERROR",
        message: "outcomeLookup(): scope() must return a non-empty string.",
      });
    }
    const id = { scope, path: input.path, key: input.key };
    const { running, record } = store.atomic?.peek
      ? await store.atomic.peek(id)
      : { running: false, record: await store.get(id) };
    return answerFor(running, record, now(), output);
  };
}

function answerFor(
  running: boolean,
  record: StoredRecord | undefined,
  now: number,
  output: ReturnType<typeof outputTransformer>,
): IdempotencyOutcomeAnswer {
  if (running) return { state: "running" };
  // A live lease holds its record even past the TTL, as the engine has it.
  if (record?.state === RecordState.IN_PROGRESS && record.leaseExpiresAt > now) return { state: "running" };
  // Past the TTL, or a lease that ended (its request died, or could not store its result): the next request with
  // the key runs.
  if (!record || record.expiresAt <= now || record.state === RecordState.IN_PROGRESS) return { state: "unknown" };
  const body = JSON.parse(record.response.body) as StoredBody;
  if (body.error) return { state: "failed", status: record.response.status, error: body.error };
  return { state: "completed", data: "result" in body ? output.deserialize(body.result) : undefined };
}
