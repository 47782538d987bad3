/**
 * The one rule for what idemkit stores as JSON when no transformer was given (a tRPC result, a Server Action's
 * value, an outbox payload): what comes back from JSON.parse(JSON.stringify(value)) as it went in. Strings, finite
 * numbers, booleans, null, arrays without holes or named properties, and objects whose prototype is Object's or
 * none. Everything else JSON would silently drop or change (undefined in an array, functions, symbols, NaN and
 * infinities, Maps, Sets, class instances, symbol keys) or throws on (bigints, cycles) is named with where it is.
 */

/** Where a value is not plain JSON, and what is there: `path` from the caller's name for the whole value. */
export interface NotPlainJson {
  path: string;
  what: string;
}

export interface PlainJsonOptions {
  /** What the whole value is called in `path`. Default "value". */
  name?: string;
  /**
   * Whether an object's undefined member is taken as absent, as JSON leaves it out (a replayed result reads it as
   * undefined either way). Default true; an outbox payload refuses it, as its consumer may tell absent from undefined.
   */
  undefinedMembers?: boolean;
  /** Whether a valid Date passes, as the ISO text JSON makes of it (an outbox payload). Default false. */
  dates?: boolean;
}

/**
 * Nesting deeper than this is refused: the check walks the value by recursion, and a value built to be deep
 * would otherwise end it with a RangeError instead of saying what is wrong.
 */
export const MAX_PLAIN_JSON_DEPTH = 100;

/** Where `value` would not come back from JSON as it went in (see the module's doc), or undefined where it would. */
export function notPlainJson(
  value: unknown,
  { name = "value", undefinedMembers = true, dates = false }: PlainJsonOptions = {},
): NotPlainJson | undefined {
  const within = new Set<object>();
  const check = (current: unknown, path: string, depth: number): NotPlainJson | undefined => {
    if (current === null || typeof current === "string" || typeof current === "boolean") return undefined;
    if (typeof current === "number") return Number.isFinite(current) ? undefined : { path, what: String(current) };
    if (current === undefined) return { path, what: "undefined" };
    if (typeof current !== "object") return { path, what: `a ${typeof current}` };
    if (dates && current instanceof Date) {
      return Number.isNaN(current.getTime()) ? { path, what: "an invalid date" } : undefined;
    }
    if (depth > MAX_PLAIN_JSON_DEPTH) return { path, what: `nested more than ${MAX_PLAIN_JSON_DEPTH} levels deep` };
    if (within.has(current)) return { path, what: "a reference back to an enclosing value (a cycle)" };
    if (Object.getOwnPropertySymbols(current).length > 0) return { path, what: "an object with symbol keys" };
    within.add(current);
    try {
      if (Array.isArray(current)) {
        if (Object.keys(current).length !== current.length) {
          return { path, what: "an array with holes or named properties" };
        }
        for (const [index, item] of current.entries()) {
          const found = check(item, `${path}[${index}]`, depth + 1);
          if (found) return found;
        }
        return undefined;
      }
      const prototype = Object.getPrototypeOf(current);
      if (prototype !== Object.prototype && prototype !== null) {
        return { path, what: `a ${current.constructor?.name ?? "class"} instance` };
      }
      for (const [member, item] of Object.entries(current)) {
        if (item === undefined && undefinedMembers) continue;
        const found = check(item, `${path}.${member}`, depth + 1);
        if (found) return found;
      }
      return undefined;
    } finally {
      within.delete(current);
    }
  };
  return check(value, name, 0);
}
