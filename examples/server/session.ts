/**
 * Who is calling: the stand-in for your authentication (Auth.js, Clerk, …), here a database session named by the
 * `session` cookie. Every idempotency record is scoped by it.
 */
import { eq } from "drizzle-orm";
import { db } from "./db";
import { sessions } from "./schema";

export interface Session {
  userId: string;
  /** The organisation the user acts for, which owns what its members share (refunds, say). */
  orgId: string;
}

const SESSION_COOKIE = /(?:^|;\s*)session=([^;]+)/;

/** The session named by the request's cookie, or null when there is none (the API then answers 401). */
export async function sessionOf(headers: Headers): Promise<Session | null> {
  const token = SESSION_COOKIE.exec(headers.get("cookie") ?? "")?.[1];
  if (!token) return null;
  const [session] = await db
    .select({ userId: sessions.userId, orgId: sessions.orgId })
    .from(sessions)
    .where(eq(sessions.token, token));
  return session ?? null;
}
