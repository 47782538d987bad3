/** The signed-in user of a Server Action: the proxy gives every page view a `uid` cookie, so a form post has one. */
import { headers } from "next/headers";
import { userFromCookies } from "@/server/user";

/** The `uid` cookie's user, the scope of the demo's actions. */
export async function currentUser(): Promise<string> {
  const userId = userFromCookies((await headers()).get("cookie"));
  if (!userId) throw new Error("No uid cookie: open the page first.");
  return userId;
}
