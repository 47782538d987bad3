/**
 * The one check of a numeric option (a duration, a size, a count), made where the option is given: a wrong one is a
 * `TypeError` when the app starts, never a refusal of every call later (a `NaN` timeout that fires at once, a
 * negative size, a duration no store can write). `Infinity` is "no limit" for the options that say so, and a
 * `TypeError` for the others: a record kept for ever, or a lease that never ends, is not a limit turned off but a
 * key held for good.
 */

/** What an option may be. */
export interface NumericRule {
  /** The least it may be. Default 0. */
  min?: number;
  /**
   * The most it may be. A duration a timer waits for at once (a lease) must fit one: past 2^31 - 1 ms (about 24.8
   * days) setTimeout fires at once. Default none.
   */
  max?: number;
  /** Whether it counts things (a size, a number of attempts), so must be whole. Default false. */
  whole?: boolean;
  /** Whether `Infinity` is allowed, as "no limit". Default false. */
  unlimited?: boolean;
}

/**
 * Throws a `TypeError` naming `owner` and `name` unless `value` is undefined (the default applies) or a number
 * that `rule` allows. Returns `value` for use in a destructuring default's place.
 */
export function checkedNumber<T extends number | undefined>(
  owner: string,
  name: string,
  value: T,
  { min = 0, max = Number.POSITIVE_INFINITY, whole = false, unlimited = false }: NumericRule = {},
): T {
  if (value === undefined) return value;
  const infinite = value === Number.POSITIVE_INFINITY;
  const valid =
    typeof value === "number" &&
    !Number.isNaN(value) &&
    value >= min &&
    (infinite || value <= max) &&
    (infinite ? unlimited : Number.isFinite(value) && (!whole || Number.isInteger(value)));
  if (!valid) {
    const range = max < Number.POSITIVE_INFINITY ? `from ${min} to ${max}` : `${min} or more`;
    const what = `${whole ? "a whole number" : "a number"}, ${range}${unlimited ? ", or Infinity for no limit" : ""}`;
    throw new TypeError(`${owner}: ${name} must be ${what} (got ${describe(value)}).`);
  }
  return value;
}

/** `value` as a message shows it: a string is quoted, so that "5" is told apart from 5. */
function describe(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

/** Whether a checked duration sets a limit at all: `Infinity` is none, for the parts that must say so to a store. */
export function isLimited(ms: number): boolean {
  return ms !== Number.POSITIVE_INFINITY;
}
