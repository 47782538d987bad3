/**
 * Order confirmations, the checkout's effect after the response: placeOrder enqueues `order.placed` in its own
 * transaction (router.ts), so the event exists if and only if the order committed; a relay publishes it (worker.ts),
 * at least once; the consumer records one confirmation per event, however often it arrives.
 */
// #region outbox
import { createOutbox, createRelay, type PublishedEvent, processOnce } from "@idemkit/outbox";
import { db } from "./db";
import { sentMail } from "./schema";

export const outbox = createOutbox();

export interface OrderPlaced {
  orderId: number;
}

// A consumer, for any broker that delivers at least once: acknowledge a message after processOnce resolves.
export async function sendConfirmation(event: PublishedEvent): Promise<void> {
  const { orderId } = event.payload as OrderPlaced;
  await processOnce({ db, consumer: "send-confirmation", eventId: event.key }, async (tx) => {
    await tx.insert(sentMail).values({ orderId });
  });
}

// The relay hands each due event to your broker, queue or webhook; here, straight to the consumer.
export const relay = createRelay({ db, publish: (event) => sendConfirmation(event) });
// #endregion outbox
