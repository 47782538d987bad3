/**
 * Gives every visitor a `uid` cookie on their first page view, and that request sees it too. API calls are left
 * alone: one without the cookie is answered 401, rather than being a new user each time (whose retries would then
 * each place an order of their own).
 */
import { type NextRequest, NextResponse } from "next/server";
import { newUserId, USER_COOKIE, userFromCookies } from "@/server/user";

const ONE_YEAR_S = 365 * 24 * 60 * 60;

export function proxy(request: NextRequest): NextResponse {
  if (userFromCookies(request.headers.get("cookie"))) return NextResponse.next();
  const userId = newUserId();
  const headers = new Headers(request.headers);
  headers.set("cookie", [request.headers.get("cookie"), `${USER_COOKIE}=${userId}`].filter(Boolean).join("; "));
  const response = NextResponse.next({ request: { headers } });
  response.cookies.set(USER_COOKIE, userId, { httpOnly: true, sameSite: "lax", path: "/", maxAge: ONE_YEAR_S });
  return response;
}

export const config = { matcher: ["/((?!_next/|api/|favicon.ico).*)"] };
