/**
 * A Server Action form added to the T3 app as the T3 guide's second diff says (docs/t3.md, `server-action.patch`):
 * `/posts/new` makes a post with `idempotentAction` and `useIdempotentActionState`, on the Next.js 15.5 T3 installs,
 * in Chromium against a real PostgreSQL. However a user or the network repeats "Create post", with JavaScript or
 * without, one user action makes one post, and the user lands on T3's home page.
 */
import {
  expectEffectTimes,
  expectOneKeyPerAction,
  loseResponsesAfterCommit,
  pressRapidly,
  watchMutations,
} from "@idemkit/playwright";
import { gate } from "@idemkit/testkit";
import { expect, test } from "@playwright/test";
import { holdFirstAnswerUntilSecondSent, pointerOn, sentAgainAfterLostAnswer } from "../form-posts.js";
import {
  closeDatabase,
  createPostButton,
  NEW_POST_PAGE,
  openNewPostForm,
  postsOf,
  signedInHome,
  signIn,
  typeTitle,
} from "./post-form.js";

const CREATE_POST = { serverActions: { page: NEW_POST_PAGE } } as const;

let userId: string;
test.beforeEach(async ({ context, baseURL }) => {
  userId = await signIn(context, String(baseURL));
});
test.afterAll(closeDatabase);

test.describe("without JavaScript", () => {
  test.use({ javaScriptEnabled: false });

  test("the form sent twice before its answer came makes one post, and lands home", async ({ page }) => {
    await openNewPostForm(page, { hydrated: false });
    await typeTitle(page, "Sent twice");
    const { firstAnswered, reachedServer } = await holdFirstAnswerUntilSecondSent(page, NEW_POST_PAGE);
    const press = await pointerOn(createPostButton(page));
    await press();
    await firstAnswered;
    // The page still shows the form: the user presses again, and the browser sends the same form once more.
    await press();
    await expect(signedInHome(page)).toBeVisible();
    expect(reachedServer()).toBe(2);
    expect(await postsOf(userId)).toBe(1);
  });

  test("the form sent again after its answer was lost makes one post, and is sent home again", async ({ page }) => {
    await openNewPostForm(page, { hydrated: false });
    await typeTitle(page, "Answer lost");
    const { lostLocation, again } = await sentAgainAfterLostAnswer(page, NEW_POST_PAGE, createPostButton(page));
    expect(lostLocation).toBe("/");
    expect(again.status()).toBe(303);
    expect(again.headers().location).toBe(lostLocation);
    expect(await postsOf(userId)).toBe(1);
  });
});

test.describe("with JavaScript", () => {
  test("a double click makes one post, sent once, and lands home", async ({ page }) => {
    await openNewPostForm(page, { hydrated: true });
    const sent = watchMutations(page, CREATE_POST);
    await typeTitle(page, "Double click");
    await pressRapidly(createPostButton(page));
    await expect(signedInHome(page)).toBeVisible();
    await expectOneKeyPerAction(sent);
    expect(sent.sent).toHaveLength(1);
    await expectEffectTimes(sent, () => postsOf(userId));
  });

  test("presses while the post is on its way join it: one post, sent once", async ({ page }) => {
    await openNewPostForm(page, { hydrated: true });
    const sent = watchMutations(page, CREATE_POST);
    // The submission waits on its way to the server until the user has pressed twice more.
    const pressedAgain = gate();
    await page.route(`**${NEW_POST_PAGE}`, async (route) => {
      if (route.request().method() !== "POST") return route.fallback();
      await pressedAgain.opened;
      await route.fallback();
    });
    await typeTitle(page, "Pressed while on its way");
    await createPostButton(page).click();
    await expect(page.getByText("Posting…")).toBeVisible();
    await createPostButton(page).click();
    await createPostButton(page).click();
    pressedAgain.open();
    await expect(signedInHome(page)).toBeVisible();
    await expectOneKeyPerAction(sent);
    expect(sent.sent).toHaveLength(1);
    await expectEffectTimes(sent, () => postsOf(userId));
  });

  test("an answer lost after the post was made is sent again with its key: one post, and lands home", async ({
    page,
  }) => {
    await openNewPostForm(page, { hydrated: true });
    const sent = watchMutations(page, CREATE_POST);
    await loseResponsesAfterCommit(page, CREATE_POST);
    await typeTitle(page, "Answer lost");
    await createPostButton(page).click();
    await expect(signedInHome(page)).toBeVisible();
    await expectOneKeyPerAction(sent);
    expect(sent.sent.length).toBeGreaterThan(1);
    await expectEffectTimes(sent, () => postsOf(userId));
  });
});
