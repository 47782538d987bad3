/** What placeOrder takes. The cart is the action's input: the same cart pressed again is the same action. */
import { z } from "zod";

export const cart = z.object({
  items: z
    .array(z.object({ sku: z.string().min(1).max(64), qty: z.number().int().positive().max(99) }))
    .min(1)
    .max(50),
});

export type Cart = z.infer<typeof cart>;
