/**
 * The key of a Server Action form travels in the form itself, as a hidden field minted when the form renders on the
 * server: the same rendered form submitted twice (a double click, a resubmission after a lost answer, with or
 * without JavaScript) is one action with one key.
 */
import { newIdempotencyKey } from "@idemkit/core/client";
import { connection } from "next/server.js";
import type { ReactElement } from "react";
import { keyInput } from "./form-contract.js";

/**
 * The hidden input that carries a form's key. A Server Component: render it inside the `<form>` on the server, or
 * pass it to a Client Component's form as a prop or children, so that each request for the page mints one key
 * (in a Client Component it would change at every render). It makes the page dynamic (`connection()`): a page
 * prerendered at build time would hand every visitor the same key. Under `cacheComponents` the page needs
 * `export const instant = false` (a blocking route), never a `<Suspense>` around the field: streamed in later, it
 * would land outside the `<form>` for a browser without JavaScript. `value` gives a key of your own.
 */
export async function IdempotencyKeyField({ value }: { value?: string } = {}): Promise<ReactElement> {
  await connection();
  return keyInput(value ?? newIdempotencyKey());
}
