/**
 * Order confirmations, the demo's effect after the response. Placing an order enqueues `order.placed` in the
 * order's own transaction (router.ts); the relay here publishes it to the "mailer", which records the confirmation
 * through processOnce, so an order gets exactly one however often its event is published. On the embedded database
 * the relay runs inside the app (PGlite is one process); with DATABASE_URL it runs as its own process,
 * `npm run worker`, as many of them as you like.
 */
import { createOutbox, createRelay, type PublishedEvent, processOnce, type Relay } from "@idemkit/outbox";
import type { Database } from "./database";
import { confirmations } from "./schema";

export const ORDER_PLACED = "order.placed";

export interface OrderPlaced {
  orderId: number;
}

export const outbox = createOutbox();

/** Sends the confirmation for one `order.placed` event, once per event whatever the deliveries. */
export async function sendConfirmation(db: Database, event: PublishedEvent): Promise<void> {
  if (event.topic !== ORDER_PLACED) return;
  const { orderId } = event.payload as OrderPlaced;
  await processOnce({ db, consumer: "order-confirmation", eventId: event.key }, async (tx) => {
    await tx.insert(confirmations).values({ orderId });
  });
}

/** A relay that publishes the outbox to the mailer; start it, and stop it on shutdown. */
export function confirmationRelay(db: Database, onError: (error: unknown) => void): Relay {
  return createRelay({
    db,
    idleMs: 250,
    publish: (event) => sendConfirmation(db, event),
    onEvent: (event) => {
      if (event.type === "error" || event.type === "dead") onError(event.error);
    },
  });
}
