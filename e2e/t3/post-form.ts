/**
 * How the tests use the T3 app: a user signed in the way NextAuth's database sessions sign one in (a user row, a
 * session row, the session cookie), T3's post form and the Server Action form the guide adds (`/posts/new`) once
 * they are hydrated, and the posts counted in the database.
 */
import { type BrowserContext, expect, type Locator, type Page } from "@playwright/test";
import { appDatabase } from "../app-database.js";

const { sql: database, close } = appDatabase("E2E_T3_DATABASE_URL");

/** Closes the tests' connection; for `test.afterAll`. */
export const closeDatabase = close;

/** Signs a new user in on `context` and returns their id. */
export async function signIn(context: BrowserContext, baseURL: string): Promise<string> {
  const id = globalThis.crypto.randomUUID();
  const sessionToken = globalThis.crypto.randomUUID();
  const sql = database();
  await sql`insert into yourapp_user (id, name, email) values (${id}, ${"Test user"}, ${`${id}@example.com`})`;
  await sql`insert into yourapp_session ("sessionToken", "userId", expires)
    values (${sessionToken}, ${id}, now() + interval '1 day')`;
  await context.addCookies([{ name: "authjs.session-token", value: sessionToken, url: baseURL }]);
  return id;
}

/** How many posts the user made, as the database has them: what each action must add once. */
export async function postsOf(userId: string): Promise<number> {
  const [row] = await database()<{ count: number }[]>`
    select count(*)::int as count from yourapp_post where "createdById" = ${userId}`;
  return row?.count ?? 0;
}

export const titleInput = (page: Page) => page.getByPlaceholder("Title");
export const submitButton = (page: Page) => page.getByRole("button", { name: "Submit" });

/** Waits until React runs the form `input` is in: the forms show no sign of it, so this looks for React's props. */
async function hydrated(input: Locator): Promise<void> {
  await expect(input).toBeVisible();
  await expect
    .poll(() => input.evaluate((element) => Object.keys(element).some((key) => key.startsWith("__reactProps"))))
    .toBe(true);
}

/** Opens the home page and waits until its post form is hydrated: a press before would submit the form natively. */
export async function openPostForm(page: Page): Promise<void> {
  await page.goto("/");
  await hydrated(titleInput(page));
}

/** The page of the Server Action form the T3 guide adds. */
export const NEW_POST_PAGE = "/posts/new";
export const createPostButton = (page: Page) => page.getByRole("button", { name: "Create post" });
/** What the home page shows a signed-in user, where the Server Action sends them once the post is made. */
export const signedInHome = (page: Page) => page.getByText("Logged in as Test user");

/** Opens the Server Action form; with JavaScript, waits until React runs it (a press before is a form post). */
export async function openNewPostForm(page: Page, { hydrated: withReact }: { hydrated: boolean }): Promise<void> {
  await page.goto(NEW_POST_PAGE);
  if (withReact) await hydrated(titleInput(page));
  else await expect(titleInput(page)).toBeVisible();
}

/** Types the post's title, as the user does before pressing the form's button. */
export async function typeTitle(page: Page, title: string): Promise<void> {
  await titleInput(page).fill(title);
}

/** T3's form clears its title once a post is made (its onSuccess). */
export async function expectPosted(page: Page): Promise<void> {
  await expect(titleInput(page)).toHaveValue("", { timeout: 15_000 });
}
