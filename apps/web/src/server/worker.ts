/**
 * `npm run worker`: sends order confirmations from PostgreSQL (DATABASE_URL), as a process of its own beside the
 * app; run as many as you like, they share the work. On the embedded database the app sends them itself.
 */
import { confirmationRelay } from "./confirmations";
import { type OpenDatabase, openDatabase } from "./database";
import { env } from "./env";

if (!env.databaseUrl) {
  console.error("npm run worker needs DATABASE_URL: on the embedded database the app sends confirmations itself.");
  process.exit(1);
}

const RETRY_MS = 1_000;
let opened: OpenDatabase | undefined;
// A worker started while PostgreSQL is down waits for it, as the app does.
while (!opened) {
  opened = await openDatabase({ url: env.databaseUrl, directUrl: env.directUrl, max: 2 }).catch((error: unknown) => {
    console.error(`worker: database not reachable yet, trying again in ${RETRY_MS} ms:`, error);
    return undefined;
  });
  if (!opened) await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
}
const { db, description, close } = opened;
const relay = confirmationRelay(db, (error) => console.error("worker:", error));
relay.start();
console.log(`worker: sending order confirmations from ${description}`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, async () => {
    await relay.stop();
    await close();
    process.exit(0);
  });
}
