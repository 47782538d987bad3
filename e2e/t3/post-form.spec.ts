/**
 * T3's own post form, after the T3 guide's diff (docs/t3.md), in Chromium against a real PostgreSQL: however a user or the
 * network repeats "Submit", one user action makes one post, and a press after a success makes a new one.
 */
import {
  expectEffectTimes,
  expectOneKeyPerAction,
  loseResponsesAfterCommit,
  pressRapidly,
  reloadWhileInFlight,
  watchMutations,
} from "@idemkit/playwright";
import { test } from "@playwright/test";
import { closeDatabase, expectPosted, openPostForm, postsOf, signIn, submitButton, typeTitle } from "./post-form.js";

const CREATE_POST = { procedure: "post.create" };

let userId: string;
test.beforeEach(async ({ context, page, baseURL }) => {
  userId = await signIn(context, String(baseURL));
  await openPostForm(page);
});
test.afterAll(closeDatabase);

test("two presses in one task make one post", async ({ page }) => {
  const sent = watchMutations(page, CREATE_POST);
  await typeTitle(page, "Pressed twice");
  await pressRapidly(submitButton(page), 2);
  await expectPosted(page);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, () => postsOf(userId));
});

test("a reload while the post is in flight, then pressing again, makes one post", async ({ page }) => {
  const sent = watchMutations(page, CREATE_POST);
  await typeTitle(page, "Reloaded mid-request");
  await reloadWhileInFlight(page, () => submitButton(page).click(), CREATE_POST);
  await openPostForm(page);
  await typeTitle(page, "Reloaded mid-request");
  await submitButton(page).click();
  await expectPosted(page);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, () => postsOf(userId));
});

test("an answer lost after the server committed is retried with its key and makes one post", async ({ page }) => {
  const sent = watchMutations(page, CREATE_POST);
  await loseResponsesAfterCommit(page, CREATE_POST);
  await typeTitle(page, "Answer lost");
  await submitButton(page).click();
  await expectPosted(page);
  await expectOneKeyPerAction(sent);
  await expectEffectTimes(sent, () => postsOf(userId));
});

test("a press after a success is a new post, with a new key, as T3's form had it", async ({ page }) => {
  const sent = watchMutations(page, CREATE_POST);
  for (let press = 0; press < 2; press++) {
    await typeTitle(page, "The same title");
    await submitButton(page).click();
    await expectPosted(page);
  }
  await expectOneKeyPerAction(sent, 2);
  await expectEffectTimes(sent, () => postsOf(userId), { times: 2 });
});
