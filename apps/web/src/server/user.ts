/** The demo's stand-in for authentication: the user is the `uid` cookie, set on the first visit. */

export const USER_COOKIE = "uid";

const VALID_USER = /^[A-Za-z0-9_-]{1,64}$/;

/** The user named by a request's `uid` cookie, or undefined when it is absent or not 1-64 of `A-Za-z0-9_-`. */
export function userFromCookies(cookieHeader: string | null): string | undefined {
  for (const pair of cookieHeader?.split(";") ?? []) {
    const [name, value] = pair.split("=", 2).map((part) => part.trim());
    if (name === USER_COOKIE && value && VALID_USER.test(value)) return value;
  }
  return undefined;
}

/** A new user id for a first visit: random, so no user can guess another's. */
export function newUserId(): string {
  return globalThis.crypto.randomUUID().replaceAll("-", "");
}
