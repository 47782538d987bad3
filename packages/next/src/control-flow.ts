/**
 * What Next.js throws to end an action early: `redirect()` and `permanentRedirect()` (a success that navigates),
 * `notFound()` (a 404), and the rest of its control flow. `unstable_rethrow` is Next's public way to tell these
 * apart from an action's own failure; where a redirect goes is only in its digest (`NEXT_REDIRECT;<type>;<url>;
 * <status>;`, undocumented, read the same way by tRPC's and next-safe-action's Next.js adapters), so that a replay
 * can redirect again.
 */
// Fully specified, for Node's resolution (Next.js has no exports map). Next's bundlers hand it the same functions as
// the bare name: webpack maps this file to the server build, and under Turbopack it re-exports them from there.
import { notFound, RedirectType, redirect, unstable_rethrow } from "next/navigation.js";

/** How an action that Next.js ended is stored, so that its duplicates end the same way. */
export type StoredControlFlow = { redirect: { url: string; type: "push" | "replace" } } | { notFound: true };

/**
 * Whether `error` is itself Next.js control flow. (`unstable_rethrow` also finds one in an error's cause, but Next
 * would answer the wrapping error as a failure: so is it here.)
 */
export function isControlFlow(error: unknown): boolean {
  try {
    unstable_rethrow(error);
    return false;
  } catch (thrown) {
    return thrown === error;
  }
}

/**
 * What to store for a control-flow error; undefined for one a replay does not repeat (it is not stored): the errors
 * Next.js uses to render dynamically or to postpone, `forbidden()` and `unauthorized()`.
 */
export function storedControlFlow(thrown: unknown): StoredControlFlow | undefined {
  const digest = (thrown as { digest?: unknown }).digest;
  if (typeof digest !== "string") return undefined;
  const parts = digest.split(";");
  if (parts[0] === "NEXT_REDIRECT" && parts.length >= 5) {
    // The URL may hold ";" itself: it is everything between the type and the status.
    const url = parts.slice(2, -2).join(";");
    return { redirect: { url, type: parts[1] === "replace" ? "replace" : "push" } };
  }
  if (digest === "NEXT_HTTP_ERROR_FALLBACK;404") return { notFound: true };
  return undefined;
}

/** Ends a replay as the first call ended: the same redirect, or the same 404. */
export function replayControlFlow(stored: StoredControlFlow): never {
  if (!("redirect" in stored)) return notFound();
  return redirect(stored.redirect.url, stored.redirect.type === "replace" ? RedirectType.replace : RedirectType.push);
}
