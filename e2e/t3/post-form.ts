/**
 * How the tests use the T3 app: a user signed in the way NextAuth's database sessions sign one in (a user row, a
 * session row, the session cookie), T3's post form once it is hydrated, and the posts counted in the database.
 */
import { type BrowserContext, expect, type Page } from "@playwright/test";
import postgres from "postgres";

const url = process.env.E2E_T3_DATABASE_URL;
if (!url) throw new Error("E2E_T3_DATABASE_URL is not set: run the T3 tests through `npm run e2e`.");
const sql = postgres(url, { max: 2, onnotice: () => {} });

/** Closes the tests' connection; for `test.afterAll`. */
export const closeDatabase = () => sql.end();

/** Signs a new user in on `context` and returns their id. */
export async function signIn(context: BrowserContext, baseURL: string): Promise<string> {
  const id = globalThis.crypto.randomUUID();
  const sessionToken = globalThis.crypto.randomUUID();
  await sql`insert into yourapp_user (id, name, email) values (${id}, ${"Test user"}, ${`${id}@example.com`})`;
  await sql`insert into yourapp_session ("sessionToken", "userId", expires)
    values (${sessionToken}, ${id}, now() + interval '1 day')`;
  await context.addCookies([{ name: "authjs.session-token", value: sessionToken, url: baseURL }]);
  return id;
}

/** How many posts the user made, as the database has them: what each action must add once. */
export async function postsOf(userId: string): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from yourapp_post where "createdById" = ${userId}`;
  return row?.count ?? 0;
}

export const titleInput = (page: Page) => page.getByPlaceholder("Title");
export const submitButton = (page: Page) => page.getByRole("button", { name: "Submit" });

/**
 * Opens the home page and waits until its post form is hydrated: T3's form shows no sign of it, and a press before
 * it would submit the form natively, so this waits for React's props on the input.
 */
export async function openPostForm(page: Page): Promise<void> {
  await page.goto("/");
  await expect(titleInput(page)).toBeVisible();
  await expect
    .poll(() => titleInput(page).evaluate((input) => Object.keys(input).some((key) => key.startsWith("__reactProps"))))
    .toBe(true);
}

/** Types the post's title, as the user does before pressing "Submit". */
export async function typeTitle(page: Page, title: string): Promise<void> {
  await titleInput(page).fill(title);
}

/** T3's form clears its title once a post is made (its onSuccess). */
export async function expectPosted(page: Page): Promise<void> {
  await expect(titleInput(page)).toHaveValue("", { timeout: 15_000 });
}
