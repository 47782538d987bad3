/**
 * The page's sessionStorage or localStorage, or undefined: there is none while rendering on the server, and reading
 * it throws where the browser blocks storage.
 */
export function browserStorage(which: "sessionStorage" | "localStorage"): Storage | undefined {
  try {
    return globalThis[which] ?? undefined;
  } catch {
    return undefined;
  }
}
