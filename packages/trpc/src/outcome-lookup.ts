/**
 * "Did my payment go through?" A query an app mounts once, next to its protected mutations, that answers what
 * became of one action (a procedure and a key) without sending its input again: still running, completed (with the
 * stored result), failed (with the stored error), refused (it ran, but its answer could not be stored), or unknown
 * (never seen, or expired). A client that lost an answer (a reload, a link that gave up, a tab that was offline)
 * asks it, and either shows the outcome or presses again with the same key, which is safe either way.
 *
 * A record belongs to its scope: the lookup reads only records of the caller's own scope, computed the same way as
 * the middleware's, so nobody reads another user's results by guessing keys. Scope strings carry no namespace (user
 * "7" and organisation "7" are the same string), so each procedure is read under its own middleware's scope
 * function, and a procedure the lookup does not list is refused rather than read under a scope that may not be its.
 */
import {
  type CallLimits,
  httpStatusOf,
  type IdempotencyStore,
  isIdempotencyError,
  parseIdempotencyKey,
} from "@idemkit/core";
import type { IdempotencyOutcomeAnswer } from "@idemkit/core/client";
import { lookUpOutcome, type RecordOutcome } from "@idemkit/core/internal";
import { TRPCError } from "@trpc/server";
import { toTRPCError } from "./errors.js";
import { httpFromContext, type IdempotencyHttp } from "./http.js";
import { type IdempotencyTransformer, outputTransformer, type StoredBody } from "./stored-body.js";

/** Which action to look up: the mutation's path (`checkout.placeOrder`) and the key it was sent with. */
export interface OutcomeLookupInput {
  path: string;
  key: string;
}

/** Who owns a procedure's records, from the context: the `scope` function of that procedure's middleware. */
export type OutcomeScope<TCtx> = (opts: { ctx: TCtx }) => string | Promise<string>;

/**
 * The lookup's options. `procedures` lists the procedures whose outcomes may be looked up, by path, each read under
 * the scope its own middleware uses, so that a caller only ever reads records of its own scope for that procedure:
 * a list of paths shares `scope` (`procedures: ["checkout.placeOrder"], scope`); a record names a procedure's own
 * scope where it differs (`{ "checkout.placeOrder": {}, "admin.refund": { scope: byOrganisation } }`, where `{}`
 * takes `scope`). A path not listed is refused with 404 NOT_FOUND: its records may be scoped another way.
 */
export type OutcomeLookupOptions<TCtx> = OutcomeLookupSettings &
  (
    | {
        procedures: readonly string[];
        /** The `scope` function the listed procedures' middleware uses. */
        scope: OutcomeScope<TCtx>;
      }
    | {
        procedures: Readonly<Record<string, { scope?: OutcomeScope<TCtx> }>>;
        /** The scope of the listed procedures that name none of their own (then required). */
        scope?: OutcomeScope<TCtx>;
      }
  );

/** What the lookup shares with the middleware besides scopes. */
export interface OutcomeLookupSettings {
  /** The store the `idempotency` middleware uses. */
  store: IdempotencyStore<unknown>;
  /** The middleware's `transformer`, so a completed result reads back with its types. */
  transformer?: IdempotencyTransformer;
  /** The clock, in ms since the epoch, to tell expired records; for tests that move time. */
  now?: () => number;
  /**
   * The middleware's `limits`, so that a lookup counts as one of its calls: a scope cannot ask about more keys, or
   * more at once, than it could send. Default: none.
   */
  limits?: CallLimits;
  /** The longest the read may take, in ms, before the lookup is answered 503 SERVICE_UNAVAILABLE. Default 5 s. */
  storeTimeoutMs?: number;
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
 * protected mutations, listing the procedures it answers for:
 *
 *   idempotencyOutcome: authedProcedure
 *     .input(outcomeLookupInput)
 *     .query(outcomeLookup({ store, scope, procedures: ["checkout.placeOrder"], transformer }))
 */
export function outcomeLookup<TCtx>({
  store,
  scope,
  transformer,
  procedures,
  now = Date.now,
  limits,
  storeTimeoutMs,
}: OutcomeLookupOptions<TCtx>) {
  const output = outputTransformer(transformer);
  const scopes = scopesByPath(procedures, scope);
  return async ({ ctx, input }: { ctx: TCtx; input: OutcomeLookupInput }): Promise<IdempotencyOutcomeAnswer> => {
    const scopeOf = scopes.get(input.path);
    if (!scopeOf) {
      throw new TRPCError({ code: "NOT_FOUND", message: `Outcomes of ${input.path} cannot be looked up here.` });
    }
    const scope = await scopeOf({ ctx });
    if (typeof scope !== "string" || scope.length === 0) {
      throw new TRPCError({
        code: "INTERNAL_SERVER_ERROR",
        message: "outcomeLookup(): scope() must return a non-empty string.",
      });
    }
    const id = { scope, path: input.path, key: input.key };
    try {
      return answerFor(await lookUpOutcome(store, id, { now, limits, storeTimeoutMs }), output);
    } catch (error) {
      throw isIdempotencyError(error) ? toTRPCError(error, responseHeadersOf(ctx)) : error;
    }
  };
}

/** Each listed procedure's scope function; fails at mount, not on the first lookup, when one has none. */
function scopesByPath<TCtx>(
  procedures: OutcomeLookupOptions<TCtx>["procedures"] | undefined,
  shared: OutcomeScope<TCtx> | undefined,
): Map<string, OutcomeScope<TCtx>> {
  if (!procedures) {
    throw new TypeError("outcomeLookup(): list the procedures it answers for in `procedures`, with their scopes.");
  }
  const listed: Array<[string, { scope?: OutcomeScope<TCtx> }]> = Array.isArray(procedures)
    ? procedures.map((path) => [path, {}])
    : Object.entries(procedures);
  return new Map(
    listed.map(([path, { scope = shared }]) => {
      if (!scope) {
        throw new TypeError(`outcomeLookup(): ${path} has no scope: give it its middleware's, or a shared \`scope\`.`);
      }
      return [path, scope];
    }),
  );
}

function answerFor(outcome: RecordOutcome, output: ReturnType<typeof outputTransformer>): IdempotencyOutcomeAnswer {
  if (outcome.state === "refused") {
    const { code, message } = toTRPCError(outcome.refusal, undefined);
    return { state: "refused", status: httpStatusOf(outcome.refusal.code), error: { code, message } };
  }
  if (outcome.state !== "stored") return outcome;
  const body = JSON.parse(outcome.response.body) as StoredBody;
  if (body.error) return { state: "failed", status: outcome.response.status, error: body.error };
  return { state: "completed", data: "result" in body ? output.deserialize(body.result) : undefined };
}

/** Where a refusal's `Retry-After` goes, when the context has the response's headers. */
function responseHeadersOf(ctx: unknown): Pick<IdempotencyHttp, "setHeader"> | undefined {
  try {
    return httpFromContext(ctx);
  } catch {
    // A context whose request cannot be read still gets its answer, without the header.
    return undefined;
  }
}
