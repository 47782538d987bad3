/** The store with its answers encrypted at rest: what a stolen backup of the table holds is sealed. */
// #region sealed-store
import { encryptedStore } from "@idemkit/core";
import { drizzleStore } from "@idemkit/drizzle";
import { db } from "./db";
import { answerKeys } from "./env";

const { current, previous } = answerKeys();
export const store = encryptedStore(drizzleStore({ db }), {
  current: "2026-12", // new answers are sealed with this key
  keys: {
    "2026-12": current, // 32 bytes, base64: openssl rand -base64 32
    "2026-06": previous, // kept until the answers it sealed have expired and been purged
  },
});
// #endregion sealed-store
