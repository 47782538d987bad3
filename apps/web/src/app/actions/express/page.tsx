/**
 * Express checkout, as a Server Action in lease mode: a payment whose effect leaves the database. With or without
 * JavaScript, each user action pays once; one whose answer could not be recorded is said to have maybe gone
 * through, and the next press checks.
 */
import { IdempotencyKeyField } from "@idemkit/next";
import { ExpressForm } from "./express-form";

export default async function ExpressCheckout({ searchParams }: { searchParams: Promise<{ paid?: string }> }) {
  const { paid } = await searchParams;
  return (
    <main>
      <h1>Express checkout</h1>
      <p className="lede">A Server Action in lease mode, for a payment made outside the database.</p>
      {paid ? <p role="status">Paid, order #{paid}.</p> : null}
      <ExpressForm keyField={<IdempotencyKeyField />} />
    </main>
  );
}
