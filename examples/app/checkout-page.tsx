/** The checkout page (app/checkout/page.tsx), a Server Component: the server renders each page view's key. */
// #region checkout-page
import { IdempotencyKeyField } from "@idemkit/next";
import { CheckoutForm } from "./checkout-form";

// With cacheComponents (create-next-app's default): the key field is minted per page view, and must be in the form
// as it arrives, for a browser without JavaScript. Without cacheComponents, leave this line out (Next.js refuses it).
export const instant = false;

export default function CheckoutPage() {
  return <CheckoutForm keyField={<IdempotencyKeyField />} />;
}
// #endregion checkout-page
