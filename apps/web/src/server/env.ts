/** Every environment variable the demo reads, in one place. */
export const env = {
  /** PostgreSQL URL; the embedded PGlite under `apps/web/.data/` when unset. */
  databaseUrl: process.env.DATABASE_URL || undefined,
  /** PostgreSQL URL for migrations when DATABASE_URL is a transaction pooler's (Supabase's and Neon's convention). */
  directUrl: process.env.DIRECT_URL || undefined,
  /** Where PGlite keeps its files. */
  pgliteDir: process.env.IDEMKIT_PGLITE_DIR || undefined,
  /** `1` turns on the fault switches at `/api/faults` (tests and demos). Off in every build unless set. */
  faults: process.env.IDEMKIT_FAULTS === "1",
  /** How long a request's body may take to arrive, in ms (router.ts's BODY_TIMEOUT_MS when unset). */
  bodyTimeoutMs: Number(process.env.IDEMKIT_BODY_TIMEOUT_MS) || undefined,
};
