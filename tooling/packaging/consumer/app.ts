/**
 * A user's server, written against the installed tarballs only: one protected mutation on PGlite, called twice with
 * one key; and a body that cannot be parsed, then the corrected retry with its key, which runs (the refusal of the
 * unreadable body is not stored). Prints what it saw as JSON for the packaging tests.
 */
import { readFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { drizzleStore } from "@idemkit/drizzle";
import { idempotency, idempotencyErrorData } from "@idemkit/trpc";
import { initTRPC } from "@trpc/server";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { drizzle } from "drizzle-orm/pglite";

async function main(): Promise<void> {
  const client = new PGlite();
  await client.exec(readFileSync("schema.sql", "utf8"));
  const db = drizzle({ client });
  const t = initTRPC.context<{ req: Request; resHeaders: Headers }>().create({
    errorFormatter: ({ shape, error }) => ({
      ...shape,
      data: { ...shape.data, idempotency: idempotencyErrorData(error) },
    }),
  });
  let runs = 0;
  const protectedProcedure = t.procedure.use(idempotency({ store: drizzleStore({ db }), scope: () => "consumer" }));
  const router = t.router({
    double: protectedProcedure
      .input((value) => value as { n: number })
      .mutation(({ input }) => {
        runs += 1;
        return { n: input.n * 2 };
      }),
  });
  const call = (key: string, body = JSON.stringify({ n: 21 })) =>
    fetchRequestHandler({
      endpoint: "/trpc",
      router,
      req: new Request("http://localhost/trpc/double", {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": key },
        body,
      }),
      createContext: ({ req, resHeaders }) => ({ req, resHeaders }),
    });
  const first = await call("consumer-key-1");
  const second = await call("consumer-key-1");
  const runsBefore = runs;
  const garbled = await call("consumer-key-2", '{"n": 21');
  const corrected = await call("consumer-key-2");
  console.log(
    JSON.stringify({
      runs: runsBefore,
      first: await first.text(),
      second: await second.text(),
      replayed: second.headers.get("idempotent-replayed"),
      garbled: garbled.status,
      corrected: { status: corrected.status, ran: runs === runsBefore + 1 },
    }),
  );
  await client.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
