/** The checkout page (app/checkout/page.tsx), a Server Component: the server renders each page view's key. */
// #region checkout-page
import { IdempotencyKeyField } from "@idemkit/next";
import { CheckoutForm } from "./checkout-form";

export default function CheckoutPage() {
  return <CheckoutForm keyField={<IdempotencyKeyField />} />;
}
// #endregion checkout-page
