/**
 * fireDuplicates against a protected procedure and an unprotected one, through a Fetch handler and over HTTP: its
 * report says what came back and how many times the procedure ran, in words a failing assertion can print.
 */
import { memoryStore } from "@idemkit/core";
import { fireDuplicates } from "@idemkit/core/testing";
import { serveFetch } from "@idemkit/testkit";
import { initTRPC } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { expect, it } from "vitest";
import { idempotency } from "../src/index.js";

function shop() {
  let charges = 0;
  const t = initTRPC.context<{ req: Request; resHeaders: Headers }>().create();
  const protectedCharge = t.procedure.use(idempotency({ store: memoryStore(), scope: () => "alice", mode: "lease" }));
  const router = t.router({
    charge: protectedCharge.mutation(() => ({ charge: ++charges })),
    chargeUnprotected: t.procedure.mutation(() => ({ charge: ++charges })),
  });
  const handler = (req: Request) =>
    fetchRequestHandler({
      endpoint: "/api/trpc",
      req,
      router,
      createContext: ({ req, resHeaders }) => ({ req, resHeaders }),
    });
  return { handler, charges: async () => charges };
}

it("reports one run and the replays for a protected procedure, through its Fetch handler", async () => {
  const { handler, charges } = shop();
  const storm = await fireDuplicates({ target: handler, path: "/api/trpc/charge", count: charges });
  expect(storm.ran).toBe(1);
  expect(storm.answers).toHaveLength(12);
  expect(storm.replays + (storm.statuses[409] ?? 0)).toBe(11);
  expect(String(storm)).toContain(`12 requests with key ${storm.key}`);
  expect(String(storm)).toContain("the effect happened 1 time(s)");
});

it("reports every run of an unprotected procedure, over HTTP, so the assertion that fails can say so", async () => {
  const { handler, charges } = shop();
  const served = await serveFetch(handler);
  try {
    const storm = await fireDuplicates({
      target: served.url,
      path: "/api/trpc/chargeUnprotected",
      concurrent: 4,
      late: 1,
      count: charges,
    });
    expect(storm).toMatchObject({ ran: 5, replays: 0, statuses: { 200: 5 } });
    expect(String(storm)).toMatch(/5 requests with key \S+: 5 × 200; 0 replayed; the effect happened 5 time\(s\)/);
    expect(String(storm)).toMatch(/5\. late {2}200 {2}\{"result"/);
  } finally {
    await served.close();
  }
});
